import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../infra/definitions.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { hmacSign, md5Sign } from '../../shared/domain/auth/signature.ts';
import { setPasswordByOperator } from '../../shared/domain/signin/signin.ts';
import { type AppAuth, api, appHeaders, baseUrl, serviceNow, taskAuth } from '../support/client.ts';
import { Browser } from '../support/people.ts';
import { TestReceiver } from '../support/receiver.ts';
import { ADMIN_APP, OTHER_APP, TEST_APP } from '../support/seed.ts';
import { type CreatedTask, createTask, taskBody } from '../support/tasks.ts';
import { newWorkflow } from '../support/workflows.ts';

/**
 * Hostile-but-fair clients against every endpoint (issue: "a fuzz test of at least 10,000 malformed
 * or hostile requests over every endpoint gets no 5xx and changes no state").
 *
 * Every generated request is a valid request to a real task, workflow or user with at least one
 * poison that the contract says must be refused (a bad signature, an id beyond a safe integer, a
 * field of the wrong type, a value out of range, a too-deep or too-large body, ...), plus hostile
 * noise that must not matter (unknown fields named `__proto__` or `constructor`, U+FFFF, emoji,
 * absurd nesting). So every answer must be a 4xx-class refusal: code != 0, HTTP < 500, an envelope
 * with a message that leaks no stack trace, and afterwards the targets must be exactly as before.
 * fast-check runs with a fixed seed, so a failure reproduces.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 10_500);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const PARALLEL = 8;

type Json = unknown;
type Body = Record<string, Json>;

interface Req {
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

// ---- hostile values ------------------------------------------------------------------------------

/** A value nested `depth` levels deep, as JSON text (a recursive serializer could not write it). */
const deep = (depth: number, leaf = '1'): Json => {
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    open += i % 2 ? '[' : '{"d":';
    close = (i % 2 ? ']' : '}') + close;
  }
  return { $raw: open + leaf + close };
};

/** Values that no id, integer, enum or string-with-a-format field accepts. */
const notAnId = fc.constantFrom<Json>(
  0,
  -1,
  1.5,
  '1',
  '',
  null,
  true,
  [],
  {},
  [1],
  { $raw: '1e20' },
  { $raw: '9007199254740993' },
  { $raw: '1e308' },
  { $raw: '-1e20' },
  { $raw: '1e400' },
  '\uffff',
  '🚨',
  deep(40),
);
const notAString = fc.constantFrom<Json>(1, null, true, [], {}, ['a'], { $raw: '1e308' }, deep(35));
const notAnObject = fc.constantFrom<Json>(1, 'x', null, true, [], [{}], '\uffff', { $raw: '1e20' });
const notAnArray = fc.constantFrom<Json>(1, 'x', null, true, {}, { 0: 1 }, '\ufffe');
const hostileText = fc.constantFrom(
  '\uffff\ufffe',
  '🚨🔥',
  'x'.repeat(5000),
  '<script>alert(1)</script>',
  '\u0024{jndi:ldap://x}',
  '\u0000\u0001',
  '\ud800',
  '磁盘已满',
);
/** Noise that must not matter: unknown fields that a sloppy parser would trip on. */
const noise = fc.dictionary(
  fc.constantFrom('__proto__', 'constructor', 'prototype', '', 'toString', 'hasOwnProperty', 'zzz', '\uffff'),
  fc.oneof(hostileText, notAnId, fc.constant(deep(2000))),
  { maxKeys: 3 },
);

/** Serializes a body: `{$raw: text}` becomes that JSON text (numbers JSON.stringify cannot write). */
function serialize(v: Json): string {
  if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '$raw' in v)
    return String((v as { $raw: string }).$raw);
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${serialize(x)}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

function setPath(obj: Body, path: string[], value: Json): Body {
  const out = structuredClone(obj);
  let cur = out as Record<string, Json>;
  for (const seg of path.slice(0, -1)) {
    if (!cur[seg] || typeof cur[seg] !== 'object')
      Object.defineProperty(cur, seg, { value: {}, enumerable: true, writable: true, configurable: true });
    cur = cur[seg] as Record<string, Json>;
  }
  Object.defineProperty(cur, path[path.length - 1], {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return out;
}

// ---- the targets -----------------------------------------------------------------------------------

const hook = new TestReceiver();
let task: CreatedTask;
let workflowId = 0;
const FUZZ_UID = 7777;
const FUZZ_PASSWORD = 'fuzz target password';
/** The fuzz target's signed-in browser (the routes of a signed-in person). */
const person = new Browser();

/** A poisoned field: where, and the values that must be refused there. */
type Poison = [path: string[], values: fc.Arbitrary<Json>];

interface Spec {
  /** A valid request, built fresh for each run (signatures use the service's clock). */
  valid: () => Promise<{
    auth: 'app' | 'app+task' | 'alarm' | 'intake' | 'none' | 'session';
    /** The app that signs (default TEST_APP, which holds the grant `read`). */
    app?: AppAuth;
    input: Body;
    source: 'query' | 'json' | 'form';
    /** Intake routes: the credentials in the query (the body is the alarm content). */
    query?: Record<string, string>;
  }>;
  /** Field poisons: at least one is applied (unless an auth poison is). */
  poisons: Poison[];
}

const taskAuthNow = async () => taskAuth(task);

const SPECS: Record<string, Spec> = {
  'GET /department/simple': { valid: async () => ({ auth: 'app', input: {}, source: 'query' }), poisons: [] },
  'GET /department/show': {
    valid: async () => ({ auth: 'app', input: { id: 1 }, source: 'query' }),
    poisons: [
      [['id'], fc.constantFrom<Json>('0', '-1', '1.5', 'x', '1e20', '9007199254740993', '', '99999999')],
    ],
  },
  'GET /user/profile': {
    valid: async () => ({ auth: 'app', input: { uid: 1 }, source: 'query' }),
    poisons: [
      [['uid'], fc.constantFrom<Json>('0', '-3', 'abc', '1e308', '9007199254740993', '', '424242424')],
    ],
  },
  'PUT /user/updatephone': {
    valid: async () => ({ auth: 'app', input: { uid: FUZZ_UID, phone: '13900000001' }, source: 'json' }),
    poisons: [
      [['uid'], notAnId],
      [
        ['phone'],
        fc.oneof(notAString, fc.constantFrom('12345', '23900000000', '1390000000\uffff', '+8613900000001')),
      ],
    ],
  },
  'POST /alarmtask/store': {
    valid: async () => ({ auth: 'app', input: taskBody({ name: `fuzz-${Math.random()}` }), source: 'json' }),
    poisons: [
      [['created_by'], notAnId],
      [['department_id'], notAnId],
      [['name'], fc.oneof(notAString, fc.constant('n'.repeat(101)), fc.constant(''))],
      [['flag_save_db'], fc.constantFrom<Json>(2, -1, '1', null, { $raw: '1e20' })],
      [['receiver'], notAnObject],
      [
        ['receiver', 'channels', 'email'],
        fc.oneof(
          notAnArray,
          notAnId.map((x) => [x]),
        ),
      ],
      [['receiver', 'alarmgroup'], notAnId.map((x) => [x])],
      [
        ['task_tags'],
        fc.oneof(
          notAnArray,
          notAnId.map((x) => [x]),
        ),
      ],
      [['permission', 'rw'], notAnId.map((x) => [x])],
      [
        ['receiver', 'channels', 'dinggroup'],
        fc.constantFrom<Json>(
          [{ secret: 's' }],
          [{ webhook: 1, secret: 's' }],
          'x',
          Array(7).fill({ webhook: 'a', secret: 'b' }),
        ),
      ],
      [
        ['filter'],
        fc.constantFrom<Json>(
          { enable: true },
          { enable: true, mode: 3, conditions: [] },
          { enable: false, n: { $raw: '1e20' } },
          { enable: false, x: { ['__proto__']: 1 } },
        ),
      ],
      [
        ['compress'],
        fc.constantFrom<Json>(
          { enable: true, method: 2 },
          { enable: true, method: 1 },
          { enable: true, method: 4, strategy: 9, strategy_cycle: 1 },
        ),
      ],
      [
        ['template'],
        fc.constantFrom<Json>({ template_id: { $raw: '1e20' } }, { udf: {} }, { template_id: 424242 }),
      ],
    ],
  },
  'GET /alarmtask/show': {
    valid: async () => ({ auth: 'app+task', input: { ...(await taskAuthNow()) }, source: 'query' }),
    poisons: [],
  },
  'PUT /alarmtask/update': {
    valid: async () => ({
      auth: 'app+task',
      input: { ...(await taskAuthNow()), ...task.body },
      source: 'json',
    }),
    poisons: [
      [['department_id'], notAnId],
      [['name'], fc.oneof(notAString, fc.constant('n'.repeat(101)))],
      [['receiver'], notAnObject],
      [['receiver', 'channels', 'sms'], notAnId.map((x) => [x])],
      [['permission', 'ro'], notAnId.map((x) => [x])],
      [
        ['workflow'],
        fc.constantFrom<Json>(
          { enable: true, reminds: [{ mode: 'x' }] },
          { enable: false, deep: deep(30) },
          { enable: false, n: { $raw: '9007199254740993' } },
        ),
      ],
      [
        ['upgrade'],
        fc.constantFrom<Json>(
          { enable: true, strategies: [] },
          { enable: true, strategies: [{ interval: 0, count: 1, level: 0, reuse_receiver: 1 }] },
        ),
      ],
    ],
  },
  'PUT /alarmtask/updatefields': {
    valid: async () => ({
      auth: 'app+task',
      input: { ...(await taskAuthNow()), filter_fields: ['name'], name: task.name },
      source: 'json',
    }),
    poisons: [
      [
        ['filter_fields'],
        fc.constantFrom<Json>([], ['nope'], ['__proto__'], ['constructor'], 'name', [1], ['name.x.y'], ['']),
      ],
      [['name'], fc.oneof(notAString, fc.constant('n'.repeat(101)))],
    ],
  },
  'DELETE /alarmtask': {
    valid: async () => ({ auth: 'app+task', input: { ...(await taskAuthNow()) }, source: 'form' }),
    poisons: [],
  },
  'PUT /alarmtask/stop': {
    valid: async () => ({ auth: 'app+task', input: { ...(await taskAuthNow()) }, source: 'json' }),
    poisons: [],
  },
  'PUT /alarmtask/start': {
    // The task runs: a start is a 409 even when everything else is right; poisons make sure of more.
    valid: async () => ({ auth: 'app+task', input: { ...(await taskAuthNow()) }, source: 'json' }),
    poisons: [],
  },
  'PUT /alarmtask/intake': {
    valid: async () => ({ auth: 'app+task', input: { ...(await taskAuthNow()), revoke: 1 }, source: 'json' }),
    poisons: [
      [['revoke'], fc.constantFrom<Json>(2, -1, '1', 1.5, null, { $raw: '1e20' }, [])],
      [['fixed_sign'], fc.constantFrom<Json>(2, -1, '1', true, null, { $raw: '1e20' })],
    ],
  },
  'PUT /alarmtask/ratelimit': {
    valid: async () => ({
      auth: 'app+task',
      input: { ...(await taskAuthNow()), rate_limit: 10 },
      source: 'json',
    }),
    poisons: [
      [
        ['rate_limit'],
        fc.constantFrom<Json>(-1, 100_001, 1.5, '10', null, { $raw: '1e20' }, { $raw: '1e308' }),
      ],
    ],
  },
  'PUT /alarmtask/heartbeat': {
    valid: async () => ({
      auth: 'app+task',
      input: { ...(await taskAuthNow()), interval: 5 },
      source: 'json',
    }),
    poisons: [
      [['interval'], fc.constantFrom<Json>(-1, 10_081, 1.5, '5', null, { $raw: '1e20' })],
      [['level'], fc.constantFrom<Json>(4, -1, 9, '1', 1.5)],
    ],
  },
  'PUT /alarmtask/pause': {
    valid: async () => ({ auth: 'app+task', input: { ...(await taskAuthNow()), time: 5 }, source: 'json' }),
    poisons: [
      [['time'], fc.constantFrom<Json>(0, 10081, -1, 1.5, '5', null, { $raw: '1e20' }, { $raw: '1e308' })],
    ],
  },
  'POST /alarm/report': {
    valid: async () => {
      const ts = await serviceNow();
      return {
        auth: 'alarm',
        input: { taskid: task.id, timestamp: ts, sign: hmacSign(task.token, task.id, ts), ctn: { a: 1 } },
        source: 'json',
      };
    },
    poisons: [
      [['ctn'], fc.oneof(fc.constantFrom<Json>({}, [], 'x', 1, null, deep(65), deep(10_000)), notAnObject)],
      [['level'], fc.constantFrom<Json>(4, -1, '1', 1.5, null, { $raw: '1e20' })],
      [['notice_time'], fc.constantFrom<Json>(-1, 1.5, 'x', { $raw: '1e308' }, [], '999999999999')],
      [['uuid'], fc.constantFrom<Json>('x', 1, 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', null)],
      [
        ['receiver'],
        fc.constantFrom<Json>(
          'x',
          1,
          { alarmgroup: [424242] },
          { alarmgroup: [{ $raw: '1e20' }] },
          { channels: { email: ['1'] } },
          { channels: { webhook: 'ftp://x' } },
        ),
      ],
    ],
  },
  'POST /alarm/test': {
    valid: async () => {
      const ts = await serviceNow();
      return {
        auth: 'alarm',
        input: { taskid: task.id, timestamp: ts, sign: md5Sign(task.token, task.id, ts) },
        source: 'json',
      };
    },
    poisons: [],
  },
  'GET /workflow/show': {
    valid: async () => ({ auth: 'app', input: { id: workflowId }, source: 'query' }),
    poisons: [[['id'], fc.constantFrom<Json>('0', 'x', '1e20', '9007199254740993', '', '424242424242')]],
  },
};
// The read side (issue 10): app auth and an acting user. A valid read answers code 0, so every case
// poisons something: an unknown (404) or unpermitted (403, uid 5) user, or a bad field.
const uids = (json = false) =>
  json
    ? fc.constantFrom<Json>(5, 0, -1, 'x', '1', 424242, 1.5, null, { $raw: '1e20' })
    : fc.constantFrom<Json>('5', '0', '-1', 'x', '424242', '1.5', '', '1e20');
const ids = (json = false) =>
  json
    ? fc.constantFrom<Json>(0, 'x', '1', 424242424242, 1.5, null, { $raw: '9007199254740993' })
    : fc.constantFrom<Json>('0', 'x', '424242424242', '1.5', '', '9007199254740993');
const paging: Poison[] = [
  [['limit'], fc.constantFrom<Json>('0', '101', 'x', '-1', '1.5')],
  [['cursor'], fc.constantFrom<Json>('x', '!!', 'eyJ9', 'W10', 'a'.repeat(301))],
];
const readQuery =
  (extra: Record<string, Json> = {}): Spec['valid'] =>
  async () => ({
    auth: 'app',
    input: { uid: 1, task_id: task.id, ...extra },
    source: 'query',
  });
const taskReadPoisons: Poison[] = [
  [['uid'], uids()],
  [['task_id'], ids()],
];
Object.assign(SPECS, {
  'GET /alarmtask/list': {
    valid: async () => ({ auth: 'app', input: { uid: 1 }, source: 'query' }),
    poisons: [
      [['uid'], uids().filter((u) => u !== '5')],
      [['status'], fc.constantFrom<Json>('7', 'x', '-1')],
      ...paging,
    ],
  },
  'GET /alarmtask/view': { valid: readQuery(), poisons: taskReadPoisons },
  'PUT /alarmtask/status': {
    valid: async () => ({
      auth: 'app',
      input: { uid: 1, task_id: task.id, action: 'pause', time: 5 },
      source: 'json',
    }),
    poisons: [
      [['uid'], uids(true)],
      [['task_id'], ids(true)],
      [['action'], fc.constantFrom<Json>('explode', 1, null, '')],
      [['time'], fc.constantFrom<Json>(0, 10_081, 'x', 1.5, { $raw: '1e20' })],
    ],
  },
  'PUT /alarmtask/retention': {
    valid: async () => ({
      auth: 'app+task',
      input: { ...(await taskAuthNow()), retention_days: 30 },
      source: 'json',
    }),
    poisons: [[['retention_days'], fc.constantFrom<Json>(-1, 3651, 1.5, '30', null, { $raw: '1e20' })]],
  },
  'GET /alarmtask/alarms': {
    valid: readQuery(),
    poisons: [
      ...taskReadPoisons,
      [['level'], fc.constantFrom<Json>('4', 'x', '-1')],
      [['outcome'], fc.constantFrom<Json>('maybe', '', '1')],
      [['from'], fc.constantFrom<Json>('-1', 'x', '1e20')],
      ...paging,
    ],
  },
  'GET /alarmtask/alarms/stats': {
    valid: readQuery(),
    poisons: [...taskReadPoisons, [['from'], fc.constantFrom<Json>('-1', 'x', '0')]],
  },
  'GET /alarmtask/alarm': {
    valid: readQuery({ uuid: 'fuzz-none' }),
    poisons: [...taskReadPoisons, [['history_id'], fc.constantFrom<Json>('0', 'x', '1.5')]],
  },
  'GET /alarmtask/alarm/trace': {
    valid: readQuery({ uuid: 'fuzz-none' }),
    poisons: [...taskReadPoisons, [['uuid'], fc.constantFrom<Json>('', 'u'.repeat(101))]],
  },
  'GET /workflow/list': {
    valid: readQuery(),
    poisons: [
      ...taskReadPoisons,
      [['status'], fc.constantFrom<Json>('3', 'x')],
      [['from'], fc.constantFrom<Json>('x', '-1')],
      ...paging,
    ],
  },
  'GET /workflow/counts': {
    valid: readQuery(),
    poisons: [
      ...taskReadPoisons,
      [['task_ids'], fc.constantFrom<Json>('x,y', '0', ',', `${'1,'.repeat(101)}1`)],
    ],
  },
  'GET /alarmtask/deliveries': {
    valid: readQuery(),
    poisons: [...taskReadPoisons, [['kind'], fc.constantFrom<Json>('sms', '', '1')], ...paging],
  },
  'POST /alarmtask/webhook/test': {
    valid: async () => ({ auth: 'app', input: { uid: 1, task_id: task.id }, source: 'json' }),
    poisons: [
      [['uid'], uids(true)],
      [['task_id'], ids(true)],
    ],
  },
  'POST /alarmtask/template/preview': {
    valid: async () => ({
      auth: 'app',
      input: { uid: 1, task_id: task.id, scene: 'compressed', channel: 'email' },
      source: 'json',
    }),
    poisons: [
      [['uid'], uids(true)],
      [['scene'], fc.constantFrom<Json>('x', 1, null)],
      [['channel'], fc.constantFrom<Json>('fax', '', 2)],
      [['uuid'], fc.constantFrom<Json>(123, '', 'fuzz-none')],
    ],
  },
  'GET /delivery/dlq': {
    valid: async () => ({
      auth: 'app',
      app: ADMIN_APP,
      input: { uid: 1, queue: 'webhook' },
      source: 'query',
    }),
    poisons: [
      [['uid'], uids()],
      [['queue'], fc.constantFrom<Json>('x', '', 'WEBHOOK')],
      // An unknown task is a filter that matches nothing (code 0), not a refusal.
      [['task_id'], ids().filter((id) => id !== '424242424242')],
      [['limit'], fc.constantFrom<Json>('0', '1001', 'x')],
    ],
  },
  'POST /delivery/dlq/redrive': {
    valid: async () => ({
      auth: 'app',
      app: ADMIN_APP,
      input: { uid: 1, queue: 'webhook', message_id: 'fuzz-none' },
      source: 'json',
    }),
    poisons: [
      [['uid'], uids(true)],
      [['queue'], fc.constantFrom<Json>('x', '', 1)],
      [['all'], fc.constantFrom<Json>(1, 2, 'x', true)],
      [['message_id'], fc.constantFrom<Json>('', 1, null)],
    ],
  },
  // A signed-in person's own routes (the session cookie, its CSRF token, this origin).
  'POST /auth/signout': {
    valid: async () => ({ auth: 'session', input: { everywhere: 0 }, source: 'json' }),
    poisons: [[['everywhere'], fc.constantFrom<Json>(2, -1, 'x', true, null, '1', { $raw: '1e20' })]],
  },
  'PUT /auth/password': {
    valid: async () => ({
      auth: 'session',
      input: { current: FUZZ_PASSWORD, password: 'fuzz target password' },
      source: 'json',
    }),
    poisons: [
      [['current'], fc.oneof(notAString, fc.constantFrom<Json>('', 'p'.repeat(257)))],
      [['password'], fc.oneof(notAString, fc.constantFrom<Json>('short', '', 'p'.repeat(257)))],
    ],
  },
} satisfies Record<string, Spec>);
for (const op of ['claim', 'assign', 'processed', 'reactive', 'close']) {
  SPECS[`PUT /workflow/${op}`] = {
    valid: async () => ({
      auth: 'app',
      input: {
        ids: [workflowId],
        remark: 'fuzz',
        created_by: 1,
        ...(op === 'assign' ? { assignto: [2] } : {}),
      },
      source: 'json',
    }),
    poisons: [
      [
        ['ids'],
        fc.oneof(
          fc.constantFrom<Json>(
            [],
            [workflowId, workflowId],
            Array.from({ length: 50 }, (_, i) => i + 1),
            [424242424],
          ),
          notAnArray,
          notAnId.map((x) => [x]),
        ),
      ],
      [['created_by'], fc.oneof(notAnId, fc.constant(424242))],
      [['remark'], fc.oneof(notAString, fc.constant('r'.repeat(201)))],
      ...(op === 'assign'
        ? ([
            [
              ['assignto'],
              fc.oneof(
                notAnArray,
                notAnId.map((x) => [x]),
                fc.constant([424242]),
              ),
            ],
          ] as Poison[])
        : []),
    ],
  };
}

// The monitors' intake: credentials in the query, the body is the content. The original's fixed
// signature (no time window), so a stale timestamp is no poison here.
const intakeQuery = () => {
  const ts = '1600000000';
  return { taskid: String(task.id), timestamp: ts, sign: md5Sign(task.token, task.id, ts) };
};
const intake =
  (source: 'json' | 'form' | 'query', input: Body = { host: 'fuzz' }) =>
  async () => ({
    auth: 'intake' as const,
    input,
    source,
    query: intakeQuery(),
  });
/** Intake routes that take any content: only a credential poison (or a huge body) refuses them. */
const ANY_CONTENT = new Set([
  'GET /alarm/rawbody',
  'POST /alarm/rawbody',
  'POST /alarm/arms',
  'GET /alarm/falcon',
  'POST /alarm/falcon',
  'POST /alarm/aliyun',
]);
const alertsPoison: Poison = [
  ['alerts'],
  fc.oneof(notAnArray, fc.constantFrom<Json>([1], [{ labels: 'x' }], [{ labels: null }], [deep(70)])),
];
Object.assign(SPECS, {
  'POST /alarm/alertmanager': {
    valid: intake('json', { version: '4', alerts: [{ labels: { alertname: 'fuzz' }, status: 'firing' }] }),
    poisons: [alertsPoison, [['version'], fc.constantFrom<Json>('3', 3, '', null, { $raw: '4' })]],
  },
  'POST /alarm/grafana': {
    valid: intake('json', { alerts: [{ labels: { alertname: 'fuzz' }, status: 'firing' }] }),
    poisons: [alertsPoison],
  },
  'POST /alarm/jsonbody': {
    valid: intake('json'),
    poisons: [[['nested'], fc.constantFrom<Json>(deep(65), deep(10_000))]],
  },
  'GET /alarm/rawbody': { valid: intake('query', { host: 'fuzz' }), poisons: [] },
  'POST /alarm/rawbody': { valid: intake('json'), poisons: [] },
  'POST /alarm/arms': { valid: intake('json'), poisons: [] },
  'GET /alarm/falcon': { valid: intake('query', { endpoint: 'fuzz' }), poisons: [] },
  'POST /alarm/falcon': { valid: intake('form', { endpoint: 'fuzz' }), poisons: [] },
  'POST /alarm/aliyun': { valid: intake('form', { alertName: 'fuzz' }), poisons: [] },
  // The fuzz task has no heartbeat: a well-signed ping is a 409 and changes nothing.
  'GET /alarm/heartbeat': { valid: intake('query', {}), poisons: [] },
  'POST /alarm/heartbeat': { valid: intake('json', {}), poisons: [] },
} satisfies Record<string, Spec>);

// ---- request building ------------------------------------------------------------------------------

type AuthPoison =
  | 'none'
  | 'app-missing'
  | 'app-bad-sign'
  | 'app-stale'
  | 'app-unknown'
  | 'app-other'
  | 'app-id-junk'
  | 'task-bad-sign'
  | 'task-stale'
  | 'task-id-junk'
  | 'task-missing'
  | 'session-missing'
  | 'session-forged'
  | 'csrf-missing'
  | 'csrf-wrong'
  | 'origin-other';

const appPoisons: AuthPoison[] = [
  'app-missing',
  'app-bad-sign',
  'app-stale',
  'app-unknown',
  'app-other',
  'app-id-junk',
];
const taskPoisons: AuthPoison[] = ['task-bad-sign', 'task-stale', 'task-id-junk', 'task-missing'];
const sessionPoisons: AuthPoison[] = [
  'session-missing',
  'session-forged',
  'csrf-missing',
  'csrf-wrong',
  'origin-other',
];

async function appAuthHeaders(poison: AuthPoison, app: AppAuth = TEST_APP): Promise<Record<string, string>> {
  const now = await serviceNow();
  switch (poison) {
    case 'app-missing':
      return {};
    case 'app-bad-sign':
      return { ...(await appHeaders(app)), 'x-app-sign': hmacSign('0'.repeat(40), app.id, now) };
    case 'app-stale':
      return appHeaders({ ...app, timestamp: now - 301 });
    case 'app-unknown':
      return appHeaders({ id: 424242, token: app.token });
    case 'app-other':
      return { ...(await appHeaders(OTHER_APP)), 'x-app-id': String(app.id) };
    case 'app-id-junk':
      return { 'x-app-id': '1e20', 'x-app-timestamp': String(now), 'x-app-sign': '\u00ff\u00fe%00' };
    default:
      return appHeaders(app);
  }
}

/** The signed-in browser's cookie, CSRF token and origin, with a poison. */
function sessionHeaders(poison: AuthPoison): Record<string, string> {
  const headers: Record<string, string> = {
    cookie: person.jar.header(),
    'x-csrf-token': person.csrf,
    origin: new URL(baseUrl()).origin,
  };
  if (poison === 'session-missing') delete headers.cookie;
  if (poison === 'session-forged')
    headers.cookie = 'tocsin_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
  if (poison === 'csrf-missing') delete headers['x-csrf-token'];
  if (poison === 'csrf-wrong') headers['x-csrf-token'] = `${person.csrf.slice(0, -1)}x`;
  if (poison === 'origin-other') headers.origin = 'https://evil.example';
  return headers;
}

function poisonTaskAuth(input: Body, poison: AuthPoison, now: number): Body {
  switch (poison) {
    case 'task-bad-sign':
      return { ...input, sign: hmacSign('f'.repeat(40), task.id, now) };
    case 'task-stale':
      return { ...input, timestamp: String(now - 301), sign: hmacSign(task.secret, task.id, now - 301) };
    case 'task-id-junk':
      return { ...input, id: { $raw: '9007199254740993' } };
    case 'task-missing': {
      const { sign: _s, ...rest } = input;
      return rest;
    }
    default:
      return input;
  }
}

function toRequest(
  route: string,
  input: Body,
  source: 'query' | 'json' | 'form',
  headers: Record<string, string>,
  wire: WireMode,
): Req {
  const [method, path] = route.split(' ');
  if (source === 'query' || (source === 'form' && wire === 'query')) {
    const query: Record<string, string> = {};
    for (const [k, v] of Object.entries(input)) query[k] = typeof v === 'string' ? v : serialize(v);
    return { method, path, query, headers };
  }
  if (source === 'form') {
    const form = new URLSearchParams(
      Object.entries(input).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : serialize(v)]),
    );
    return { method, path, body: form.toString(), contentType: 'application/x-www-form-urlencoded', headers };
  }
  const text = serialize(input);
  switch (wire) {
    case 'truncated':
      return {
        method,
        path,
        body: text.slice(0, Math.max(1, text.length - 3)),
        contentType: 'application/json',
        headers,
      };
    case 'wrong-type':
      return { method, path, body: text, contentType: 'text/plain', headers };
    case 'array':
      return { method, path, body: `[${text}]`, contentType: 'application/json', headers };
    case 'huge':
      return {
        method,
        path,
        body: `${text.slice(0, -1)},"pad":"${'p'.repeat(270_000)}"}`,
        contentType: 'application/json',
        headers,
      };
    default:
      return { method, path, body: text, contentType: 'application/json; charset=utf-8', headers };
  }
}

type WireMode = 'plain' | 'truncated' | 'wrong-type' | 'array' | 'huge' | 'query';

interface Case {
  route: string;
  authPoison: AuthPoison;
  fieldPoisons: [number, Json][];
  noise: Record<string, Json>;
  wire: WireMode;
}

const routeNames = Object.keys(SPECS);
const INTAKE_ROUTES = new Set(
  routeNames.filter((r) => r.includes(' /alarm/') && !/\/alarm\/(report|test)$/.test(r)),
);

const caseArb: fc.Arbitrary<Case> = fc
  .constantFrom(...routeNames)
  .chain((route) => {
    const spec = SPECS[route];
    const def = routes.find((r) => `${r.method} ${r.path}` === route);
    const auth = INTAKE_ROUTES.has(route)
      ? 'intake'
      : route.startsWith('POST /alarm/')
        ? 'alarm'
        : def?.auth === 'app+task'
          ? 'app+task'
          : def?.auth === 'person'
            ? 'session'
            : 'app';
    const authChoices: AuthPoison[] =
      auth === 'alarm'
        ? ['none']
        : auth === 'app+task'
          ? [...appPoisons, ...taskPoisons]
          : auth === 'session'
            ? sessionPoisons
            : appPoisons;
    const fieldPoison = spec.poisons.length
      ? fc.array(
          fc
            .integer({ min: 0, max: spec.poisons.length - 1 })
            .chain((i) => spec.poisons[i][1].map((v): [number, Json] => [i, v])),
          { minLength: 1, maxLength: 3 },
        )
      : fc.constant([] as [number, Json][]);
    // An alarm report has no app auth: its poison is a bad alarm signature or a field.
    const alarmAuth = fc.constantFrom<AuthPoison>(
      'none',
      'task-bad-sign',
      'task-stale',
      'task-id-junk',
      'task-missing',
    );
    const intakeAuth = fc.constantFrom<AuthPoison>('none', 'task-bad-sign', 'task-id-junk', 'task-missing');
    return fc.record({
      route: fc.constant(route),
      authPoison:
        auth === 'intake'
          ? intakeAuth
          : auth === 'alarm'
            ? alarmAuth
            : fc.oneof(fc.constantFrom<AuthPoison>(...authChoices), fc.constant<AuthPoison>('none')),
      fieldPoisons: fieldPoison,
      noise,
      wire: fc.constantFrom<WireMode>(
        'plain',
        'plain',
        'plain',
        'plain',
        'truncated',
        'wrong-type',
        'array',
        'huge',
        'query',
      ),
    });
  })
  // Every case must carry at least one thing the contract refuses.
  .filter((c) => {
    const spec = SPECS[c.route];
    const isJson = !c.route.startsWith('GET ') && c.route !== 'DELETE /alarmtask';
    // Alarm endpoints read JSON whatever the content type says (curl -d senders).
    const alarm = c.route.startsWith('POST /alarm/');
    const wireRefused = isJson && !['plain', 'query', ...(alarm ? ['wrong-type'] : [])].includes(c.wire);
    const noFieldPoison = spec.poisons.length === 0;
    const alarmOk = c.route === 'POST /alarm/test' && c.authPoison === 'none' && !wireRefused;
    if (alarmOk) return false;
    // Any text, query or form is content there: only a bad credential (or a huge body) refuses it.
    if (ANY_CONTENT.has(c.route)) {
      // (a huge body is refused where the body is raw text; a form is built without wire modes)
      const huge = c.wire === 'huge' && /^POST \/alarm\/(rawbody|arms)$/.test(c.route);
      return c.authPoison !== 'none' || huge;
    }
    if (c.route.endsWith(' /alarm/heartbeat')) return true;
    return (
      c.authPoison !== 'none' ||
      c.fieldPoisons.length > 0 ||
      wireRefused ||
      (noFieldPoison && c.route === 'PUT /alarmtask/start')
    );
  });

async function build(c: Case): Promise<Req> {
  const spec = SPECS[c.route];
  const base = await spec.valid();
  const now = await serviceNow();
  // A query string has a size limit of its own (API Gateway and the local server answer 414/431
  // before any handler runs): noise in a query stays short.
  const inQuery = base.source === 'query' || c.wire === 'query';
  const noise = Object.fromEntries(
    Object.entries(c.noise).filter(([, v]) => !inQuery || serialize(v).length < 200),
  );
  let input: Body = { ...noise, ...base.input };
  for (const [i, value] of c.fieldPoisons) input = setPath(input, spec.poisons[i][0], value);
  if (base.auth === 'app+task') input = poisonTaskAuth(input, c.authPoison, now);
  if (base.auth === 'alarm') {
    if (c.authPoison === 'task-bad-sign') input.sign = hmacSign('0'.repeat(40), task.id, now);
    if (c.authPoison === 'task-stale') {
      input.timestamp = now - 1801;
      input.sign = hmacSign(task.token, task.id, now - 1801);
    }
    if (c.authPoison === 'task-id-junk') input.taskid = { $raw: '1e20' };
    if (c.authPoison === 'task-missing') delete input.sign;
  }
  const headers =
    base.auth === 'app' || base.auth === 'app+task'
      ? await appAuthHeaders(c.authPoison, base.app)
      : base.auth === 'session'
        ? sessionHeaders(c.authPoison)
        : {};
  const wire = base.source === 'json' || c.wire === 'query' ? c.wire : 'plain';
  const req = toRequest(
    c.route,
    input,
    base.source,
    headers,
    base.source === 'json' && wire === 'query' ? 'plain' : wire,
  );
  if (base.query) {
    const q: Record<string, string> = { ...base.query };
    if (c.authPoison === 'task-bad-sign') q.sign = md5Sign('0'.repeat(40), task.id, q.timestamp);
    if (c.authPoison === 'task-id-junk') q.taskid = '1e20';
    if (c.authPoison === 'task-missing') delete q.sign;
    req.query = { ...req.query, ...q };
  }
  return req;
}

async function send(r: Req): Promise<{ status: number; text: string }> {
  const url = new URL(r.path, baseUrl());
  for (const [k, v] of Object.entries(r.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { ...(r.headers ?? {}) };
  if (r.contentType) headers['content-type'] = r.contentType;
  const res = await fetch(url, { method: r.method, headers, body: r.body });
  return { status: res.status, text: await res.text() };
}

// ---- state ------------------------------------------------------------------------------------------

async function snapshot() {
  const item = async (key: Record<string, string>) =>
    (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;
  const perms = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.task(task.id).pk },
      ConsistentRead: true,
    }),
  );
  return {
    task: await item(keys.task(task.id)),
    taskPartition: perms.Items,
    workflow: await item(keys.workflow(workflowId)),
    user: await item(keys.user(FUZZ_UID)),
    // The fuzz target's password and sign-out stamp: no hostile request signs it out or changes it.
    credential: await item(keys.userCredential(FUZZ_UID)),
  };
}

describe('fuzz: hostile requests over every endpoint', () => {
  beforeAll(async () => {
    await hook.start();
    await importDirectory({
      users: [
        {
          uid: FUZZ_UID,
          username: 'Fuzz Target',
          user: 'fuzz',
          email: 'fuzz@example.com',
          phone: '13800007777',
        },
      ],
    });
    // The fuzz target signs in (its own routes: sign out, its password).
    await setPasswordByOperator(FUZZ_UID, FUZZ_PASSWORD);
    if ((await person.signIn('fuzz', FUZZ_PASSWORD)).json.code !== 0) throw new Error('fuzz sign-in failed');
    task = await createTask({ receiver: { channels: { email: [1], webhook: `${hook.url}/fuzz` } } });
    // The adapters' fixed signature is on for this task (it is off by default).
    await api.put('/alarmtask/intake', { ...(await taskAuth(task)), fixed_sign: 1 });
    workflowId = (await newWorkflow(task)).id;
    // The task's PING and the workflow's `generated` event arrive before the fuzz starts.
    await hook.waitFor(
      (all) => all.some((r) => r.json?.event === 'PING') && all.some((r) => r.json?.type === 'generated'),
    );
  });
  afterAll(() => hook.stop());

  it('covers every deployed route', () => {
    // Routes without auth that take no input (health, the API documents, the console) answer 200 to anything.
    const deployed = routes
      .filter((r) => !r.localOnly && r.auth !== 'none')
      .map((r) => `${r.method} ${r.path}`);
    expect(routeNames.sort()).toEqual(deployed.sort());
  });

  it(`answers ${RUNS} hostile requests with refusals, never a 5xx, and changes nothing`, async () => {
    // Arrange
    const before = await snapshot();
    const eventsBefore = hook.received.length;
    const cases = fc.sample(caseArb, { numRuns: RUNS, seed: SEED });
    const failures: string[] = [];
    const perRoute = new Map<string, number>();
    // Act
    let next = 0;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let i = next++; i < cases.length; i = next++) {
          const c = cases[i];
          perRoute.set(c.route, (perRoute.get(c.route) ?? 0) + 1);
          const req = await build(c);
          const res = await send(req);
          let env: { code?: unknown; msg?: unknown; data?: unknown } = {};
          try {
            env = JSON.parse(res.text);
          } catch {
            env = {};
          }
          const problem =
            res.status >= 500
              ? `HTTP ${res.status}`
              : typeof env.code !== 'number' || typeof env.msg !== 'string' || typeof env.data !== 'object'
                ? 'not an envelope'
                : env.code === 0
                  ? 'accepted'
                  : /\bat .+\.(ts|js):\d+|stack|Dynamo|SQS|\bAWS\b|Exception/.test(String(env.msg))
                    ? `leaky message: ${env.msg}`
                    : undefined;
          if (problem && failures.length < 20)
            failures.push(
              `${problem}: ${c.route} auth=${c.authPoison} wire=${c.wire} poisons=${serialize(c.fieldPoisons).slice(0, 300)} -> ${res.status} ${res.text.slice(0, 200)}`,
            );
        }
      }),
    );
    // Assert
    expect(failures).toEqual([]);
    expect([...perRoute.keys()].sort()).toEqual(routeNames.sort());
    await new Promise((r) => setTimeout(r, 1500));
    expect(await snapshot()).toEqual(before);
    expect(hook.received.slice(eventsBefore).map((r) => r.json?.event)).toEqual([]);
  }, 600_000);
});
