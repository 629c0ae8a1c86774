import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { md5Sign } from '../../shared/domain/auth/signature.ts';
import { checkHeartbeat, HEARTBEAT_KIND } from '../../shared/domain/alarms/heartbeat.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import { api, call, taskAuth, FIXED_SIGN_TIMESTAMP, serviceNow } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * The inbound adapters for monitors and the heartbeat, end to end on the local stack: the payloads
 * these systems really send, authenticated by a fixed signature or an intake token, through the
 * queue and the pipeline to the task's webhook.
 */
const receiver = new TestReceiver();

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

/** Alertmanager's documented webhook example (prometheus.io, "webhook_config"), two alerts. */
function alertmanagerPayload(status: 'firing' | 'resolved', alerts = 2) {
  return {
    version: '4',
    groupKey: '{}:{alertname="HighLatency"}',
    truncatedAlerts: 0,
    status,
    receiver: 'tocsin',
    groupLabels: { alertname: 'HighLatency' },
    commonLabels: { alertname: 'HighLatency', job: 'api' },
    commonAnnotations: {},
    externalURL: 'http://alertmanager.example:9093',
    alerts: Array.from({ length: alerts }, (_, i) => ({
      status,
      labels: {
        alertname: 'HighLatency',
        job: 'api',
        instance: `api-${i}:9100`,
        severity: i === 0 ? 'critical' : 'warning',
      },
      annotations: { summary: `p99 latency above 1s on api-${i}` },
      startsAt: '2026-11-24T08:00:00.000Z',
      endsAt: status === 'resolved' ? '2026-11-24T08:05:00.000Z' : '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus.example:9090/graph?g0.expr=latency',
      fingerprint: `f1a2b3c4d5e6f70${i}`,
    })),
  };
}

/** Grafana unified alerting's webhook body (Grafana docs, "Webhook notifier"). */
function grafanaPayload(status: 'firing' | 'resolved') {
  return {
    receiver: 'tocsin',
    status,
    orgId: 1,
    alerts: [
      {
        status,
        labels: { alertname: 'DiskFull', grafana_folder: 'Infra', instance: 'db-1', severity: 'error' },
        annotations: { description: 'disk usage above 90%' },
        startsAt: '2026-11-24T09:00:00Z',
        endsAt: status === 'resolved' ? '2026-11-24T09:10:00Z' : '0001-01-01T00:00:00Z',
        generatorURL: 'http://grafana.example/alerting/grafana/abc/view',
        fingerprint: '57c6d9296de2ad39',
        silenceURL: 'http://grafana.example/alerting/silence/new',
        dashboardURL: 'http://grafana.example/d/dash',
        panelURL: 'http://grafana.example/d/dash?viewPanel=1',
        values: { B: 93.5 },
        valueString: "[ var='B' labels={instance=db-1} value=93.5 ]",
      },
    ],
    groupLabels: { alertname: 'DiskFull' },
    commonLabels: { alertname: 'DiskFull' },
    commonAnnotations: {},
    externalURL: 'http://grafana.example/',
    version: '1',
    groupKey: '{}:{alertname="DiskFull"}',
    truncatedAlerts: 0,
    title: '[FIRING:1] DiskFull',
    state: 'alerting',
    message: '**Firing**',
  };
}

/** A task's events of a kind (each once under the chaos queue, by webhook-id). */
const eventsOf = (t: { id: number }, event: string): Received[] =>
  eachOnce(
    receiver.received.filter((r) => r.json?.data?.task?.id === t.id && r.json.event === event),
    (r) => r.headers['webhook-id'],
  );

async function waitEvents(t: { id: number }, event: string, count: number): Promise<Received[]> {
  await receiver.waitFor(() => eventsOf(t, event).length >= count);
  return eventsOf(t, event);
}

/** Longer than the webhook consumer's first retry backoff (a replayed duplicate would show by then). */
const settle = () => new Promise((r) => setTimeout(r, 1_500));

/** A task with a webhook receiver that takes the original's fixed signature on its adapters. */
async function webhookTask(overrides: Record<string, unknown> = {}) {
  const t = await createTask({ receiver: { channels: { email: [1], webhook: receiver.url } }, ...overrides });
  const on = await api.put('/alarmtask/intake', { ...(await taskAuth(t)), fixed_sign: 1 });
  expect(on.data).toEqual({ id: t.id, fixed_sign: 1 });
  return t;
}

/** The original's fixed signature: signed once (a month ago), in the query. */
function fixedSign(t: CreatedTask, timestamp = FIXED_SIGN_TIMESTAMP) {
  return { taskid: t.id, timestamp, sign: md5Sign(t.token, t.id, timestamp) };
}

async function intakeToken(t: CreatedTask): Promise<string> {
  const res = await api.put('/alarmtask/intake', { ...(await taskAuth(t)) });
  expect(res.code).toBe(0);
  return res.data.intake_token as string;
}

const ctnOf = (e: Received) => e.json.data.history.ctn as Record<string, unknown>;

describe('authentication of the adapters', () => {
  it('takes a fixed signature and an intake token, and refuses anything else with 401', async () => {
    const t = await webhookTask();
    const token = await intakeToken(t);
    const body = { check: 'auth' };
    // Fixed signature (signed a month ago), bearer token, token in the query
    const bySign = await call('POST', '/alarm/jsonbody', { app: null, query: fixedSign(t), json: body });
    const byBearer = await call('POST', '/alarm/jsonbody', {
      app: null,
      query: { taskid: t.id },
      headers: { authorization: `Bearer ${token}` },
      json: body,
    });
    const byQuery = await call('POST', '/alarm/jsonbody', {
      app: null,
      query: { taskid: t.id, token },
      json: body,
    });
    expect([bySign, byBearer, byQuery].map((r) => [r.status, r.code])).toEqual([
      [200, 0],
      [200, 0],
      [200, 0],
    ]);
    // Refused: bad sign, the task token itself, another task's id, no credentials, a revoked token
    const other = await webhookTask();
    const refused: Record<string, string | number>[] = [
      { ...fixedSign(t), sign: 'f'.repeat(32) },
      { taskid: t.id, token: t.token },
      { taskid: other.id, token },
      { taskid: t.id },
    ];
    for (const query of refused) {
      const res = await call('POST', '/alarm/jsonbody', { app: null, query, json: body });
      expect([res.status, res.code, res.msg]).toEqual([401, 401, 'signature invalid']);
    }
    // A new token ends the old one at once (the token is read on every use, never from a cache)
    const fresh = await intakeToken(t);
    const [old, renewed] = await Promise.all(
      [token, fresh].map((tk) =>
        call('POST', '/alarm/jsonbody', { app: null, query: { taskid: t.id, token: tk }, json: body }),
      ),
    );
    expect([old.status, old.msg]).toEqual([401, 'signature invalid']);
    expect(renewed.code).toBe(0);
    const revoked = await api.put('/alarmtask/intake', { ...(await taskAuth(t)), revoke: 1 });
    expect(revoked.data).toEqual({ id: t.id, intake_token: null });
    const after = await call('POST', '/alarm/jsonbody', {
      app: null,
      query: { taskid: t.id, token: fresh },
      json: body,
    });
    expect([after.status, after.msg]).toEqual([401, 'signature invalid']);
    // The accepted alarms arrive, nothing from the refused ones
    await waitEvents(t, 'ALARM', 4);
    await settle();
    expect(eventsOf(t, 'ALARM')).toHaveLength(4);
  });

  it('takes a fixed signature for FIXED_SIGN_MAX_DAYS (365) after its timestamp, none older or from the future', async () => {
    const t = await webhookTask();
    const now = await serviceNow();
    const send = (timestamp: number) =>
      call('POST', '/alarm/jsonbody', {
        app: null,
        query: fixedSign(t, timestamp),
        json: { age: timestamp },
      });
    const answers = await Promise.all(
      [now - 364 * 86_400, now - 366 * 86_400, 1, 0, now + 86_400].map(async (ts) => (await send(ts)).status),
    );
    // A year old works; older (the 1970 timestamp of the review among them) and a day ahead do not.
    expect(answers).toEqual([200, 401, 401, 401, 401]);
  });

  it('takes the fixed signature only from a task that turned it on', async () => {
    const t = await createTask({ receiver: { channels: { email: [1], webhook: receiver.url } } });
    const send = () => call('POST', '/alarm/jsonbody', { app: null, query: fixedSign(t), json: { a: 1 } });
    expect((await send()).status).toBe(401);
    await api.put('/alarmtask/intake', { ...(await taskAuth(t)), fixed_sign: 1 });
    // (the door sees the change within TASK_CACHE_SECONDS)
    const deadline = Date.now() + 20_000;
    let res = await send();
    while (res.status === 401 && Date.now() < deadline) {
      await settle();
      res = await send();
    }
    expect([res.status, res.code]).toEqual([200, 0]);
  });

  it('keeps the HTTP statuses for refusals: 409 for a stopped task, 400 for a bad body', async () => {
    const t = await webhookTask();
    const stop = await api.put('/alarmtask/stop', { ...(await taskAuth(t)) });
    expect(stop.code).toBe(0);
    const stopped = await call('POST', '/alarm/jsonbody', { app: null, query: fixedSign(t), json: { a: 1 } });
    expect([stopped.status, stopped.code]).toEqual([409, 4001]);
    await api.put('/alarmtask/start', { ...(await taskAuth(t)) });
    const notObject = await call('POST', '/alarm/jsonbody', {
      app: null,
      query: fixedSign(t),
      body: '[1,2]',
    });
    expect([notObject.status, notObject.code]).toEqual([400, 400]);
    const badLevel = await call('POST', '/alarm/jsonbody', {
      app: null,
      query: { ...fixedSign(t), level: 7 },
      json: { a: 1 },
    });
    expect([badLevel.status, badLevel.code, badLevel.msg]).toEqual([
      400,
      4000,
      'level must be one of 0, 1, 2, 3',
    ]);
  });
});

describe('Prometheus Alertmanager (webhook v4)', () => {
  it('makes one alarm per alert with labels and annotations, levels from severity, once however often it is sent', async () => {
    const t = await webhookTask();
    const token = await intakeToken(t);
    const send = (body: unknown) =>
      call('POST', '/alarm/alertmanager', {
        app: null,
        query: { taskid: t.id },
        headers: { authorization: `Bearer ${token}` },
        json: body,
      });
    const res = await send(alertmanagerPayload('firing'));
    expect(res.status).toBe(200);
    expect(res.data.uuids).toHaveLength(2);
    const events = await waitEvents(t, 'ALARM', 2);
    const byInstance = new Map(events.map((e) => [(ctnOf(e).labels as Record<string, string>).instance, e]));
    const first = byInstance.get('api-0:9100') as Received;
    expect(ctnOf(first)).toEqual({
      labels: { alertname: 'HighLatency', job: 'api', instance: 'api-0:9100', severity: 'critical' },
      annotations: { summary: 'p99 latency above 1s on api-0' },
      startsAt: '2026-11-24T08:00:00.000Z',
      generatorURL: 'http://prometheus.example:9090/graph?g0.expr=latency',
      fingerprint: 'f1a2b3c4d5e6f700',
    });
    expect(first.json.data.history.level).toBe(3);
    expect(byInstance.get('api-1:9100')?.json.data.history.level).toBe(1);
    // Alertmanager re-sends the whole group when it changes: the same alerts are not alarms again
    const again = await send(alertmanagerPayload('firing'));
    expect(again.data.uuids).toEqual(res.data.uuids);
    await settle();
    expect(eventsOf(t, 'ALARM')).toHaveLength(2);
  });

  it('takes a re-sent alert once for a task that stores no alarms, too', async () => {
    const t = await webhookTask({ flag_save_db: 0 });
    const send = () =>
      call('POST', '/alarm/alertmanager', {
        app: null,
        query: fixedSign(t),
        json: alertmanagerPayload('firing', 1),
      });
    expect((await send()).status).toBe(200);
    const [first] = await waitEvents(t, 'ALARM', 1);
    expect(first.json.type).toBe('not_save_db');
    expect((await send()).status).toBe(200);
    await settle();
    await settle();
    expect(eventsOf(t, 'ALARM')).toHaveLength(1);
  });

  it('turns a resolved alert into a recovery of the same metric that finishes its workflow', async () => {
    // Content compression (method 3): the metric comes from the alert's content alone
    const t = await webhookTask({
      compress: { enable: true, method: 3, strategy: 1, strategy_cycle: 600, not_match: 1 },
      workflow: { enable: true, reminds: [] },
    });
    const q = fixedSign(t);
    const fired = await call('POST', '/alarm/alertmanager', {
      app: null,
      query: q,
      json: alertmanagerPayload('firing', 1),
    });
    expect(fired.status).toBe(200);
    const [generated] = await waitWorkflowEvents(t, 'generated', 1);
    const workflowId = generated.json.data.workflow.id as number;
    const resolved = await call('POST', '/alarm/alertmanager', {
      app: null,
      query: q,
      json: alertmanagerPayload('resolved', 1),
    });
    expect(resolved.status).toBe(200);
    const [recovery] = await waitEvents(t, 'RECOVERY', 1);
    expect(recovery.json.type).toBe('recovery');
    expect(ctnOf(recovery).fingerprint).toBe('f1a2b3c4d5e6f700');
    const firedRecord = await getAlarmRecord(t.id, fired.data.uuids[0] as string);
    const recoveryRecord = await getAlarmRecord(t.id, resolved.data.uuids[0] as string);
    expect(recoveryRecord?.outcome).toBe('recovery');
    expect(recoveryRecord?.recovery_metric).toBe(firedRecord?.history.metric);
    const deadline = Date.now() + 15_000;
    while ((await showWorkflow(workflowId)).status !== 2 && Date.now() < deadline) await settle();
    expect((await showWorkflow(workflowId)).status).toBe(2);
  });
});

async function waitWorkflowEvents(t: { id: number }, type: string, count: number) {
  const match = () => receiver.events('WORKFLOW', type).filter((r) => r.json.data.task.id === t.id);
  await receiver.waitFor(() => match().length >= count);
  return match();
}

async function showWorkflow(id: number) {
  const res = await api.get('/workflow/show', { query: { id } });
  return res.data.workflow as { status: number };
}

describe('Grafana', () => {
  it('takes the unified alerting webhook: an alarm per alert, resolved as a recovery', async () => {
    const t = await webhookTask();
    const q = fixedSign(t);
    const fired = await call('POST', '/alarm/grafana', {
      app: null,
      query: q,
      json: grafanaPayload('firing'),
    });
    expect(fired.status).toBe(200);
    const [alarm] = await waitEvents(t, 'ALARM', 1);
    expect(ctnOf(alarm)).toMatchObject({
      labels: { alertname: 'DiskFull', instance: 'db-1', severity: 'error' },
      fingerprint: '57c6d9296de2ad39',
      dashboardURL: 'http://grafana.example/d/dash',
      panelURL: 'http://grafana.example/d/dash?viewPanel=1',
    });
    expect(alarm.json.data.history.level).toBe(2);
    await call('POST', '/alarm/grafana', { app: null, query: q, json: grafanaPayload('resolved') });
    const [recovery] = await waitEvents(t, 'RECOVERY', 1);
    expect(ctnOf(recovery).fingerprint).toBe('57c6d9296de2ad39');
  });

  it("takes the original's body (Grafana's DingDing notifier message)", async () => {
    const t = await webhookTask();
    const body = {
      msgtype: 'link',
      link: {
        title: '[Alerting] CPU high',
        text: 'cpu above 90%\\nhost web-1',
        messageUrl: `dingtalk://dingtalkclient/page/link?pc_slide=false&url=${encodeURIComponent('http://grafana.example/d/cpu?panelId=2')}`,
        picUrl: '',
      },
    };
    const res = await call('POST', '/alarm/grafana', { app: null, query: fixedSign(t), json: body });
    expect([res.status, res.data.uuids]).toEqual([200, [expect.any(String)]]);
    const [alarm] = await waitEvents(t, 'ALARM', 1);
    expect(ctnOf(alarm)).toMatchObject({
      title: '[Alerting] CPU high',
      text: 'cpu above 90%\nhost web-1',
      msgtype: 'link',
      grafanaUrl: 'http://grafana.example/d/cpu?panelId=2',
    });
  });
});

describe('the original system adapters', () => {
  it('jsonbody, rawbody (POST and GET), arms, falcon (GET) and aliyun (form) each make the alarm the original did', async () => {
    const t = await webhookTask();
    const q = fixedSign(t);
    const json = await call('POST', '/alarm/jsonbody', {
      app: null,
      query: { ...q, level: 2 },
      body: '{"host":"web-1","trace_id":12345678901234567890}',
      headers: { 'content-type': 'text/plain' },
    });
    const raw = await call('POST', '/alarm/rawbody', { app: null, query: q, body: 'disk full on web-1' });
    const rawGet = await call('GET', '/alarm/rawbody', {
      app: null,
      query: { ...q, level: 3, host: 'web-2', msg: 'disk full' },
    });
    const rawGetEmpty = await call('GET', '/alarm/rawbody', { app: null, query: q });
    const arms = await call('POST', '/alarm/arms', { app: null, query: q, body: '{"alertname":"arms"}' });
    const falcon = await call('GET', '/alarm/falcon', {
      app: null,
      query: {
        ...q,
        endpoint: 'web-1',
        metric: 'cpu.idle',
        status: 'PROBLEM',
        left_value: '3.2',
        priority: '0',
      },
    });
    const aliyun = await call('POST', '/alarm/aliyun', {
      app: null,
      query: q,
      form: {
        alertName: 'CPU usage',
        alertState: 'ALERT',
        dimensions: '{userId=12345, instanceId=i-abc 1}',
        expression: '$Average>=90',
        curValue: '95',
        metricName: 'CPUUtilization',
        namespace: 'acs_ecs_dashboard',
        ruleId: 'rule/1',
        timestamp: '1764000000000',
        signature: 'cloud-monitor-signature',
      },
    });
    for (const res of [json, raw, rawGet, rawGetEmpty, arms, falcon, aliyun])
      expect([res.status, res.code]).toEqual([200, 0]);
    const events = await waitEvents(t, 'ALARM', 7);
    const byUuid = new Map(events.map((e) => [e.json.data.history.uuid as string, e]));
    const ctn = (res: { data: Record<string, unknown> }) =>
      ctnOf(byUuid.get(res.data.uuid as string) as Received);
    expect(byUuid.get(json.data.uuid as string)?.body).toContain('"trace_id":12345678901234567890');
    expect(byUuid.get(json.data.uuid as string)?.json.data.history.level).toBe(2);
    expect(ctn(raw)).toEqual({ body: 'disk full on web-1' });
    // GET: no body, so {body: ""}, and the query parameters but the credentials and the level
    expect(ctn(rawGet)).toEqual({ body: '', host: 'web-2', msg: 'disk full' });
    expect(ctn(rawGetEmpty)).toEqual({ body: '' });
    expect(byUuid.get(rawGet.data.uuid as string)?.json.data.history.level).toBe(3);
    expect(ctn(arms)).toEqual({ body: '{"alertname":"arms"}' });
    expect(ctn(falcon)).toEqual({
      endpoint: 'web-1',
      metric: 'cpu.idle',
      status: 'PROBLEM',
      left_value: '3.2',
      priority: '0',
    });
    expect(ctn(aliyun)).toMatchObject({
      alertName: 'CPU usage',
      userId: '12345',
      instanceId: 'i-abc 1',
      instanceId_urlencode: 'i-abc%201',
      condition: '平均值',
      threshold: '>=90',
      date: '2025-11-24 16:00:00',
      ruleId_urlencode: 'rule%2F1',
    });
    expect(ctn(aliyun)).not.toHaveProperty('signature');
  });
});

/**
 * The heartbeat's checks run from the due work at the service clock, which other suites move by
 * hours at a time; so the checks are called here at explicit times (a week's interval is never crossed
 * by another suite's jump during a test), and the HTTP endpoints set, ping and stop it.
 */
describe('heartbeat', () => {
  const WEEK = 10_080;
  const state = async (t: CreatedTask) => {
    const task = await getTask(t.id, true);
    const item = {
      kind: HEARTBEAT_KIND,
      ref: String(t.id),
      due_at: 0,
      payload: { task_id: t.id, since: task?.heartbeat?.since },
    };
    return { task, item };
  };

  it('raises an alarm when a task is silent past its interval and recovers on the next ping', async () => {
    const t = await webhookTask();
    const set = await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: WEEK, level: 3 });
    expect(set.data).toEqual({ id: t.id, interval: WEEK, level: 3 });
    const { task, item } = await state(t);
    expect(task?.heartbeat).toMatchObject({ interval: WEEK, level: 3 });
    // A ping: the check at the deadline re-arms for a week after the ping
    const ping = await call('GET', '/alarm/heartbeat', { app: null, query: fixedSign(t) });
    expect([ping.status, ping.code, ping.data.interval]).toEqual([200, 0, WEEK]);
    const last = ping.data.last_seen as number;
    const period = WEEK * 60;
    expect(await checkHeartbeat(item, last + period - 1)).toEqual({ reschedule: last + period });
    // Silent past the deadline: one alarm of the configured level, checked again a week later
    expect(await checkHeartbeat(item, last + period + 5)).toEqual({ reschedule: last + 2 * period + 5 });
    const [missed] = await waitEvents(t, 'ALARM', 1);
    expect(missed.json.data.history.level).toBe(3);
    expect(ctnOf(missed)).toMatchObject({ heartbeat: 'missed', interval_minutes: WEEK, task: t.name });
    // Still silent at the next check: no second alarm
    await checkHeartbeat(item, last + 2 * period + 10);
    await settle();
    expect(eventsOf(t, 'ALARM')).toHaveLength(1);
    // Back: the ping sends the recovery, with the miss's content
    await call('POST', '/alarm/heartbeat', { app: null, query: fixedSign(t) });
    const [recovery] = await waitEvents(t, 'RECOVERY', 1);
    expect(ctnOf(recovery)).toEqual(ctnOf(missed));
    // Off: the armed check stops
    const off = await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: 0 });
    expect(off.data).toEqual({ id: t.id, interval: 0, level: null });
    expect(await checkHeartbeat(item, last + 10 * period)).toBeUndefined();
  });

  it('turning the heartbeat off while a miss is raised sends its recovery', async () => {
    const t = await webhookTask();
    await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: WEEK });
    const { item } = await state(t);
    const since = item.payload.since as number;
    await checkHeartbeat(item, since + WEEK * 60 + 1);
    const [missed] = await waitEvents(t, 'ALARM', 1);
    await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: 0 });
    const [recovery] = await waitEvents(t, 'RECOVERY', 1);
    expect(ctnOf(recovery)).toEqual(ctnOf(missed));
  });

  it('counts an accepted alarm as a sign of life, and refuses pings of a task without a heartbeat', async () => {
    const t = await webhookTask();
    await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: WEEK });
    const { item } = await state(t);
    const since = item.payload.since as number;
    await new Promise((r) => setTimeout(r, 1_100));
    const res = await call('POST', '/alarm/jsonbody', {
      app: null,
      query: fixedSign(t),
      json: { alive: true },
    });
    expect(res.code).toBe(0);
    await waitEvents(t, 'ALARM', 1);
    // The alarm moved the deadline: the check at the first deadline re-arms instead of raising
    const again = await checkHeartbeat(item, since + WEEK * 60);
    expect(again).toMatchObject({ reschedule: expect.any(Number) });
    expect((again as { reschedule: number }).reschedule).toBeGreaterThan(since + WEEK * 60);
    await settle();
    expect(eventsOf(t, 'ALARM')).toHaveLength(1);
    await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: 0 });
    const none = await call('GET', '/alarm/heartbeat', { app: null, query: fixedSign(t) });
    expect([none.status, none.code]).toEqual([409, 409]);
  });
});

describe('per-task alarm rate limit (API guide §5.11)', () => {
  it('PUT /alarmtask/ratelimit sets it, the door enforces it with 429, 0 restores the default', async () => {
    const t = await webhookTask();
    const set = await api.put('/alarmtask/ratelimit', { ...(await taskAuth(t)), rate_limit: 1 });
    expect(set.data).toEqual({ id: t.id, rate_limit: 1, default: false });
    const bad = await api.put('/alarmtask/ratelimit', { ...(await taskAuth(t)), rate_limit: -1 });
    expect([bad.status, bad.msg]).toEqual([
      422,
      'rate_limit must be 0 (the deployment default) to 100000 alarms per second',
    ]);
    // Within TASK_CACHE_SECONDS the door sees the new limit: a burst of three gets a 429
    const deadline = Date.now() + 10_000;
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    while (!refused && Date.now() < deadline) {
      const burst = await Promise.all(
        [1, 2, 3].map(() =>
          call('POST', '/alarm/jsonbody', { app: null, query: fixedSign(t), json: { n: 1 } }),
        ),
      );
      refused = burst.find((r) => r.status === 429);
      if (!refused) await settle();
    }
    expect(refused && [refused.code, refused.msg]).toEqual([
      4010,
      `task [${t.id}] reached its rate limit of 1 alarms per second`,
    ]);
    const reset = await api.put('/alarmtask/ratelimit', { ...(await taskAuth(t)), rate_limit: 0 });
    // The deployment default (ALARM_RATE_LIMIT; the test stack sets its own)
    expect(reset.data).toEqual({ id: t.id, rate_limit: expect.any(Number), default: true });
    expect(reset.data.rate_limit).toBeGreaterThan(1);
  });
});
