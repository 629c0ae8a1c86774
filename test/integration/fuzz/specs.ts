import fc from 'fast-check';
import { hmacSign, md5Sign } from '../../../shared/domain/auth/signature.ts';
import { type AppAuth, serviceNow, FIXED_SIGN_TIMESTAMP } from '../../support/client.ts';
import { ADMIN_APP } from '../../support/seed.ts';
import { taskBody } from '../../support/tasks.ts';

import { FUZZ_PASSWORD, FUZZ_UID, task, taskAuthNow, workflowId } from './targets.ts';
import { type Body, deep, type Json, notAnArray, notAnId, notAnObject, notAString } from './values.ts';
/** Per route: a valid request built fresh for each run, and the field poisons it must refuse. */

/** A poisoned field: where, and the values that must be refused there. */
export type Poison = [path: string[], values: fc.Arbitrary<Json>];

export interface Spec {
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

export const SPECS: Record<string, Spec> = {
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
export const uids = (json = false) =>
  json
    ? fc.constantFrom<Json>(5, 0, -1, 'x', '1', 424242, 1.5, null, { $raw: '1e20' })
    : fc.constantFrom<Json>('5', '0', '-1', 'x', '424242', '1.5', '', '1e20');
export const ids = (json = false) =>
  json
    ? fc.constantFrom<Json>(0, 'x', '1', 424242424242, 1.5, null, { $raw: '9007199254740993' })
    : fc.constantFrom<Json>('0', 'x', '424242424242', '1.5', '', '9007199254740993');
export const paging: Poison[] = [
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
  'PUT /alarmtask/credentials': {
    valid: async () => ({
      auth: 'app+task',
      input: { ...(await taskAuthNow()), secret: 1, overlap_minutes: 60 },
      source: 'json',
    }),
    poisons: [
      [['overlap_minutes'], fc.constantFrom<Json>(-1, 10_081, 1.5, '60', null, { $raw: '1e20' })],
      [['secret'], fc.constantFrom<Json>(2, -1, '1', true, null)],
      [['token'], fc.constantFrom<Json>(2, '1', false, [1])],
    ],
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
      // With the grant `admin` the app has the super administrator's powers whoever `uid` names
      // (docs/sign-in.md): an existing user (5) is no poison here, an unknown or malformed one is.
      [['uid'], uids().filter((u) => u !== '5')],
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
      [['uid'], uids(true).filter((u) => u !== 5)],
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
// signature (valid for a year after its timestamp), so a month-old timestamp is no poison here.
const intakeQuery = () => {
  const ts = String(FIXED_SIGN_TIMESTAMP);
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
export const ANY_CONTENT = new Set([
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
