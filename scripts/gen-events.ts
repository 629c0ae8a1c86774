import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RouteDef, routes } from '../infra/definitions.ts';
import { queues, schedule } from '../infra/consumers.ts';

/**
 * `npm run gen:events`: the sample events under events/ — an API Gateway HTTP API (payload 2.0)
 * request for every deployed route, an SQS batch for each queue consumer and the EventBridge
 * scheduled event — for `npm run invoke` and `sam local invoke`. The signatures in them are
 * placeholders: `npm run invoke` signs them afresh (docs/invoke.md).
 */
const root = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const T = 1795536000; // 2026-11-24T16:00:00Z
const TASK = { id: 1, timestamp: String(T), sign: 'SIGN' };
const ALARM = { taskid: 1, timestamp: T, sign: 'SIGN' };
const INTAKE = { taskid: '1', timestamp: String(T), sign: 'SIGN' };

/** `PUT /alarmtask/update` -> `PutAlarmtaskUpdate` (the CDK construct ids of the route functions). */
export function routeName(route: Pick<RouteDef, 'method' | 'path'>): string {
  return `${route.method.toLowerCase()} ${route.path}`
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
}

export interface Sample {
  query?: Record<string, string>;
  json?: unknown;
  text?: string;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** Request cookies (`name=value`), as API Gateway hands them over. */
  cookies?: string[];
}

/** A signed-in browser's session cookie (a placeholder: a real one comes from POST /auth/signin). */
const SESSION = ['__Host-tocsin_session=SESSION'];

const taskBody = {
  name: 'sample-task',
  created_by: 1,
  department_id: 1,
  flag_save_db: 1,
  receiver: { channels: { email: [1] } },
};

const scheduleBody = {
  name: 'infra primary',
  department_id: 1,
  time_zone: 'Europe/London',
  layers: [
    {
      name: 'weekdays',
      start: '2026-11-23T09:00',
      turn: { every: 1, unit: 'week' },
      users: [1, 2],
      restrictions: [{ days: [1, 2, 3, 4, 5], from: '09:00', to: '18:00' }],
    },
  ],
  fallback: [1],
};

/** The sample request of every deployed route (also the examples of the OpenAPI document). */
export const samples: Record<string, Sample> = {
  'GET /health': {},
  'GET /openapi.json': {},
  'GET /docs': {},
  'GET /console': {},
  // A claim link's token and page nonce are placeholders (a real token comes in a message).
  'GET /claim': { query: { t: 'TOKEN' } },
  'POST /claim': { form: { t: 'TOKEN', n: 'PAGE_NONCE' } },
  'GET /department/simple': {},
  'GET /department/show': { query: { id: '1' } },
  'GET /user/profile': { query: { uid: '1' } },
  'PUT /user/updatephone': { json: { uid: 1, phone: '13800000000' } },
  'POST /alarmtask/store': { json: taskBody },
  'GET /alarmtask/show': { query: { id: '1', timestamp: TASK.timestamp, sign: TASK.sign } },
  'PUT /alarmtask/update': { json: { ...TASK, ...taskBody } },
  'PUT /alarmtask/updatefields': { json: { ...TASK, filter_fields: ['flag_save_db'], flag_save_db: 1 } },
  'DELETE /alarmtask': { form: { id: '1', timestamp: TASK.timestamp, sign: TASK.sign } },
  'PUT /alarmtask/stop': { json: TASK },
  'PUT /alarmtask/start': { json: TASK },
  'PUT /alarmtask/pause': { json: { ...TASK, time: 30 } },
  'PUT /alarmtask/intake': { json: TASK },
  'PUT /alarmtask/ratelimit': { json: { ...TASK, rate_limit: 500 } },
  'PUT /alarmtask/heartbeat': { json: { ...TASK, interval: 10, level: 2 } },
  'PUT /alarmtask/retention': { json: { ...TASK, retention_days: 30 } },
  'PUT /alarmtask/credentials': { json: { ...TASK, token: 1, secret: 1, overlap_minutes: 60 } },
  'GET /alarmtask/view': { query: { uid: '1', task_id: '1' } },
  'PUT /alarmtask/status': { json: { uid: 1, task_id: 1, action: 'pause', time: 30 } },
  'GET /alarmtask/alarms': { query: { uid: '1', task_id: '1', outcome: 'notified', limit: '20' } },
  'GET /alarmtask/alarms/stats': { query: { uid: '1', task_id: '1' } },
  'GET /alarmtask/alarm': { query: { uid: '1', task_id: '1', uuid: '8c6bd1d8-0c4c-4a43-9f4c-0d2f5d0e8f4b' } },
  'GET /alarmtask/alarm/trace': {
    query: { uid: '1', task_id: '1', uuid: '8c6bd1d8-0c4c-4a43-9f4c-0d2f5d0e8f4b' },
  },
  'POST /alarmtask/replay': {
    json: {
      uid: 1,
      task_id: 1,
      config: { filter_fields: ['compress.strategy_cycle'], compress: { strategy_cycle: 30 } },
      last: 500,
      scenario: [{ name: 'disk-full', ctn: { host: 'web-1', error: 'disk full' }, level: 2 }],
      expect: [{ alarm: 'disk-full', outcome: 'notified', receivers: { include: [1] } }],
    },
  },
  'GET /alarmtask/replay': { query: { uid: '1', replay_id: '5f1c2a0e-8d3b-4f6a-9c7e-2b1d0a9f8e7c' } },
  'POST /alarm/report': { json: { ...ALARM, level: 1, ctn: { host: 'web-1', error: 'disk full' } } },
  'POST /alarm/test': { json: ALARM },
  'POST /alarm/alertmanager': {
    query: INTAKE,
    json: {
      version: '4',
      status: 'firing',
      receiver: 'tocsin',
      groupKey: '{}:{alertname="HighLatency"}',
      groupLabels: { alertname: 'HighLatency' },
      commonLabels: { alertname: 'HighLatency' },
      commonAnnotations: {},
      externalURL: 'http://alertmanager.example:9093',
      truncatedAlerts: 0,
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'HighLatency', instance: 'api-1:9100', severity: 'critical' },
          annotations: { summary: 'p99 latency above 1s' },
          startsAt: '2026-11-24T08:00:00Z',
          endsAt: '0001-01-01T00:00:00Z',
          generatorURL: 'http://prometheus.example:9090/graph',
          fingerprint: 'f1a2b3c4d5e6f700',
        },
      ],
    },
  },
  'POST /alarm/grafana': {
    query: INTAKE,
    json: {
      receiver: 'tocsin',
      status: 'firing',
      orgId: 1,
      version: '1',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'DiskFull', instance: 'db-1', severity: 'error' },
          annotations: { description: 'disk usage above 90%' },
          startsAt: '2026-11-24T09:00:00Z',
          endsAt: '0001-01-01T00:00:00Z',
          generatorURL: 'http://grafana.example/alerting/grafana/abc/view',
          fingerprint: '57c6d9296de2ad39',
        },
      ],
    },
  },
  'POST /alarm/jsonbody': { query: INTAKE, json: { host: 'web-1', error: 'disk full' } },
  'GET /alarm/rawbody': { query: { ...INTAKE, host: 'web-1', msg: 'disk full' } },
  'POST /alarm/rawbody': { query: INTAKE, text: 'disk full on web-1' },
  'POST /alarm/arms': { query: INTAKE, text: '{"alertname":"arms"}' },
  'GET /alarm/falcon': { query: { ...INTAKE, endpoint: 'web-1', metric: 'cpu.idle', status: 'PROBLEM' } },
  'POST /alarm/falcon': { query: INTAKE, form: { endpoint: 'web-1', metric: 'cpu.idle', status: 'PROBLEM' } },
  'POST /alarm/aliyun': {
    query: INTAKE,
    form: {
      alertName: 'CPU usage',
      expression: '$Average>=90',
      dimensions: '{instanceId=i-1}',
      timestamp: String(T * 1000),
    },
  },
  'GET /alarm/heartbeat': { query: INTAKE },
  'POST /alarm/heartbeat': { query: INTAKE },
  'GET /workflow/show': { query: { id: '1' } },
  'PUT /workflow/claim': { json: { ids: [1], created_by: 1 } },
  'PUT /workflow/assign': { json: { ids: [1], created_by: 1, assignto: [2], remark: 'yours' } },
  'PUT /workflow/processed': { json: { ids: [1], created_by: 1, remark: 'fixed' } },
  'PUT /workflow/reactive': { json: { ids: [1], created_by: 1, remark: 'again' } },
  'PUT /workflow/close': { json: { ids: [1], created_by: 1, remark: 'noise' } },
  // [read:tasks-workflows]
  'GET /alarmtask/list': { query: { uid: '1', q: 'rizhi', status: '1', limit: '20' } },
  'GET /workflow/list': { query: { uid: '1', task_id: '1', status: '0', limit: '20' } },
  'GET /workflow/counts': { query: { uid: '1', task_ids: '1,2' } },
  // [read:deliveries]
  'GET /alarmtask/deliveries': { query: { uid: '1', task_id: '1', kind: 'all', limit: '20' } },
  'POST /alarmtask/webhook/test': { json: { uid: 1, task_id: 1 } },
  'POST /alarmtask/template/preview': {
    json: { uid: 1, task_id: 1, scene: 'compressed', channel: 'sms' },
  },
  'GET /delivery/dlq': { query: { uid: '1', queue: 'webhook', limit: '20' } },
  'POST /delivery/dlq/redrive': { json: { uid: 1, queue: 'webhook', all: 1, task_id: 1 } },
  // [oncall]
  'POST /schedule/store': { json: { uid: 1, ...scheduleBody } },
  'GET /schedule/show': { query: { uid: '1', id: '1' } },
  'PUT /schedule/update': { json: { uid: 1, id: 1, effective_from: T + 86_400, ...scheduleBody } },
  'DELETE /schedule': { form: { uid: '1', id: '1' } },
  'GET /schedule/list': { query: { uid: '1', limit: '20' } },
  'POST /schedule/override': { json: { uid: 1, id: 1, start: T + 3600, end: T + 7200, user: 2 } },
  'DELETE /schedule/override': { form: { uid: '1', id: '1', override_id: '1' } },
  'GET /schedule/oncall': { query: { uid: '1', id: '1', at: String(T) } },
  'GET /schedule/final': { query: { uid: '1', id: '1', from: String(T), to: String(T + 14 * 86_400) } },
  'POST /schedule/preview': {
    json: { uid: 1, id: 1, from: T, to: T + 14 * 86_400, ...scheduleBody },
  },
  'PUT /schedule/ical': { json: { uid: 1, id: 1 } },
  'GET /schedule/ical.ics': { query: { id: '1', key: '0123456789abcdef0123456789abcdef01234567' } },
  'GET /alarmtask/oncall': { query: { uid: '1', task_id: '1', days: '14' } },
  // [sign-in]
  'POST /auth/signin': {
    json: { account: 'annlee', password: 'PASSWORD' },
    headers: { origin: 'https://api.example' },
  },
  'GET /auth/session': { cookies: SESSION },
  'POST /auth/signout': { json: { everywhere: 0 } },
  'PUT /auth/password': { json: { current: 'CURRENT-PASSWORD', password: 'NEW-PASSWORD' } },
  'GET /auth/oidc/start': {},
  'GET /auth/oidc/callback': { query: { code: 'CODE', state: 'STATE' }, cookies: ['__Host-tocsin_oidc=STATE'] },
};

/** Routes an app may call (every kind but a signed-in person's own). */
const APP_AUTH = new Set(['app', 'app+task', 'app|person', 'reader', 'admin']);

export function httpEvent(route: Pick<RouteDef, 'method' | 'path' | 'auth'>, sample: Sample) {
  const headers: Record<string, string> = { host: 'api.example', 'user-agent': 'sample', ...sample.headers };
  let cookies = sample.cookies;
  if (APP_AUTH.has(route.auth)) {
    Object.assign(headers, { 'x-app-id': '1', 'x-app-timestamp': String(T), 'x-app-sign': 'SIGN' });
  } else if (route.auth === 'person') {
    Object.assign(headers, { origin: 'https://api.example', 'x-csrf-token': 'CSRF-TOKEN' });
    cookies ??= SESSION;
  }
  let body: string | undefined;
  if (sample.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(sample.json);
  } else if (sample.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(sample.form).toString();
  } else if (sample.text !== undefined) {
    headers['content-type'] = 'text/plain';
    body = sample.text;
  }
  const rawQueryString = new URLSearchParams(sample.query ?? {}).toString();
  return {
    version: '2.0',
    routeKey: `${route.method} ${route.path}`,
    rawPath: route.path,
    rawQueryString,
    ...(cookies ? { cookies } : {}),
    headers,
    ...(sample.query ? { queryStringParameters: sample.query } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'sample',
      domainName: 'api.example',
      domainPrefix: 'api',
      http: {
        method: route.method,
        path: route.path,
        protocol: 'HTTP/1.1',
        sourceIp: '192.0.2.1',
        userAgent: 'sample',
      },
      requestId: 'sample-request',
      routeKey: `${route.method} ${route.path}`,
      stage: '$default',
      time: '24/Nov/2026:16:00:00 +0000',
      timeEpoch: T * 1000,
    },
    ...(body !== undefined ? { body } : {}),
    isBase64Encoded: false,
  };
}

function sqsEvent(queue: string, bodies: unknown[]) {
  return {
    Records: bodies.map((body, i) => ({
      messageId: `sample-${queue}-${i + 1}`,
      receiptHandle: `sample-receipt-${i + 1}`,
      body: JSON.stringify(body),
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(T * 1000),
        SenderId: 'sample',
        ApproximateFirstReceiveTimestamp: String(T * 1000),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:us-east-1:123456789012:tocsin-${queue}`,
      awsRegion: 'us-east-1',
    })),
  };
}

/**
 * The task the queue samples name: the first one a fresh stack creates (README, "First steps"), so
 * `npm run invoke -- process-alarm events/sqs/process-alarm.json` processes the alarm instead of
 * dropping it for an unknown task (the HTTP samples' task is set by `--task` / `--alarm`).
 */
const FIRST_TASK = 100001;

const queueSamples: Record<string, unknown[]> = {
  alarm: [
    {
      kind: 'alarm',
      uuid: '0b5c7a1e-2f4d-4c6b-9a8e-1d2c3b4a5f60',
      task_id: FIRST_TASK,
      level: 1,
      ctn: { host: 'web-1', error: 'disk full' },
      notice_time: T,
      reported_at: T,
    },
  ],
  webhook: [
    {
      kind: 'webhooks',
      task_id: FIRST_TASK,
      created_at: T,
      events: [
        { event_id: `${FIRST_TASK}:sample:PING`, body: { event: 'PING', type: 'ping', data: {}, extra: {} } },
      ],
    },
  ],
  notify: [
    {
      kind: 'notify',
      job_id: `${FIRST_TASK}:0b5c7a1e-2f4d-4c6b-9a8e-1d2c3b4a5f60:not_compress:email`,
      task_id: FIRST_TASK,
      scene: 'not_compress',
      channel: 'email',
      users: [1],
      context: {
        task: { id: FIRST_TASK, name: 'sample-task' },
        history: {
          id: 1,
          uuid: '0b5c7a1e-2f4d-4c6b-9a8e-1d2c3b4a5f60',
          level: 1,
          ctn: { host: 'web-1', error: 'disk full' },
          notice_time: T,
          created_at: T,
        },
      },
    },
  ],
  replay: [{ kind: 'replay', replay_id: '5f1c2a0e-8d3b-4f6a-9c7e-2b1d0a9f8e7c' }],
};

export function allEvents(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const r of routes.filter((r) => !r.localOnly)) {
    const sample = samples[`${r.method} ${r.path}`];
    if (!sample)
      throw new Error(`no sample event for ${r.method} ${r.path}: add one to scripts/gen-events.ts`);
    out[`http/${routeName(r)}.json`] = httpEvent(r, sample);
  }
  for (const q of queues) {
    const name = q.consumer.split('/').at(-1)?.replace(/\.ts$/, '');
    out[`sqs/${name}.json`] = sqsEvent(q.name, queueSamples[q.name]);
  }
  const scheduleName = schedule.handler.split('/').at(-1)?.replace(/\.ts$/, '');
  out[`schedule/${scheduleName}.json`] = {
    version: '0',
    id: 'sample-event',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: '2026-11-24T16:00:00Z',
    region: 'us-east-1',
    resources: ['arn:aws:events:us-east-1:123456789012:rule/tocsin-due-work'],
    detail: {},
  };
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = join(root, 'events');
  // Only the generated folders (events/directory holds the sample directory export).
  for (const sub of ['http', 'sqs', 'schedule']) rmSync(join(dir, sub), { recursive: true, force: true });
  for (const [file, event] of Object.entries(allEvents())) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), `${JSON.stringify(event, null, 2)}\n`);
  }
  console.log(`wrote ${Object.keys(allEvents()).length} sample events under events/`);
}
