import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { api, serviceNow } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { newWorkflow } from '../support/workflows.ts';

/**
 * Forged cursors on every listing with one (`/alarmtask/alarms`, `/alarmtask/deliveries`,
 * `/alarmtask/list`, `/workflow/list`; dead letters and the per-minute counts take none): hand-built
 * base64url of plausible but wrong values (keys of no listing, positions outside the window, a day
 * other than its key's, negative, fractional and huge counts, wrong types, lone surrogates, keys
 * longer than DynamoDB takes, deep arrays, other listings' cursors, another task's). Each is a 422
 * naming `cursor`, never a 5xx; a forged cursor that is a valid position answers like any page.
 */

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const cursorOf = (value: unknown) => b64(JSON.stringify(value));
const DAY_MS = 86_400_000;
const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** JSON text nested `depth` arrays deep around `leaf`. */
const deepArray = (depth: number, leaf = '0') => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;

const hook = new TestReceiver();
let task: CreatedTask;
let other: CreatedTask;
let nowMs = 0;
let today = 0;
/** A real cursor of each listing (taken from its first page). */
const real: Record<'alarms' | 'deliveries' | 'tasks' | 'workflows', string> = {
  alarms: '',
  deliveries: '',
  tasks: '',
  workflows: '',
};

interface Listing {
  path: string;
  query: () => Record<string, string | number>;
}
const LISTINGS: Record<keyof typeof real, Listing> = {
  alarms: { path: '/alarmtask/alarms', query: () => ({ uid: 1, task_id: task.id, limit: 1 }) },
  deliveries: { path: '/alarmtask/deliveries', query: () => ({ uid: 1, task_id: task.id, limit: 1 }) },
  tasks: { path: '/alarmtask/list', query: () => ({ uid: 1, limit: 1 }) },
  workflows: { path: '/workflow/list', query: () => ({ uid: 1, task_id: task.id, limit: 1 }) },
};

async function list(name: keyof typeof real, cursor?: string, extra: Record<string, string | number> = {}) {
  const l = LISTINGS[name];
  return api.get(l.path, { query: { ...l.query(), ...extra, ...(cursor !== undefined ? { cursor } : {}) } });
}

async function report(t: CreatedTask, n: number) {
  const ts = await serviceNow();
  const res = await api.post('/alarm/report', {
    taskid: t.id,
    timestamp: ts,
    sign: hmacSign(t.token, t.id, ts),
    ctn: { n },
  });
  expect(res.code).toBe(0);
}

/** Wrong values that any listing refuses: not its shape at all. */
function anyListing(): [string, string][] {
  return [
    ['null', b64('null')],
    ['true', b64('true')],
    ['a string', b64('"x"')],
    ['a number', b64('42')],
    ['1e309', b64('1e309')],
    ['-1e309', b64('-1e309')],
    ['an empty object', b64('{}')],
    ['an empty array', b64('[]')],
    ['100 nested arrays', b64(deepArray(100))],
    ['nested objects', b64(`${'{"a":'.repeat(60)}0${'}'.repeat(60)}`)],
  ];
}

function alarmCursors(): [string, string][] {
  const ms = nowMs - 60_000;
  const sk = `${pad(ms, 13)}#0123456789ab`;
  const day = Math.floor(ms / DAY_MS);
  return [
    ['today\'s day, sort key "0", 0 (a reported 500)', cursorOf([today, '0', 0])],
    ['a sort key that is only digits', cursorOf([day, pad(ms, 13), 0])],
    ['a sort key with a lone surrogate', b64(`[${day},"${pad(ms, 13)}#\\ud800",0]`)],
    ['a sort key with a space', cursorOf([day, `${pad(ms, 13)}# x`, 0])],
    ['a sort key longer than any listing key', cursorOf([day, `${pad(ms, 13)}#${'a'.repeat(1001)}`, 0])],
    ['a day other than its key', cursorOf([day - 1, sk, 0])],
    ['a day in the future', cursorOf([day + 1_000, `${pad(ms + 1_000 * DAY_MS, 13)}#0123456789ab`, 0])],
    ['a day before the window', cursorOf([day - 400, `${pad(ms - 400 * DAY_MS, 13)}#0123456789ab`, 0])],
    ['a negative day', cursorOf([-1, sk, 0])],
    ['a huge day', b64(`[1e308,"${sk}",0]`)],
    ['a string day', cursorOf([String(day), sk, 0])],
    ['a fractional day', cursorOf([day + 0.5, sk, 0])],
    ['a negative count', cursorOf([day, sk, -1])],
    ['a huge count', cursorOf([day, sk, 2 ** 53])],
    ['2^53 + 1 as count', b64(`[${day},"${sk}",9007199254740993]`)],
    ['a fractional count', cursorOf([day, sk, 1.5])],
    ['a count of 1e309', b64(`[${day},"${sk}",1e309]`)],
    ['a string count', cursorOf([day, sk, '0'])],
    ['a number as sort key', cursorOf([day, 5, 0])],
    ['null as sort key', cursorOf([day, null, 0])],
    ['two parts', cursorOf([day, sk])],
    ['four parts', cursorOf([day, sk, 0, 0])],
    ['parts in an object', cursorOf({ day, sk, taken: 0 })],
    ['deep arrays in the parts', b64(`[${deepArray(40, String(day))},"${sk}",0]`)],
  ];
}

function deliveryCursors(): [string, string][] {
  const ms = nowMs - 60_000;
  const sk = `${pad(ms, 13)}#e1#1`;
  const day = Math.floor(ms / DAY_MS);
  const c = (change: Record<string, unknown>) =>
    cursorOf({ v: 1, t: task.id, k: 'all', p: {}, d: [], ...change });
  return [
    ['another version', c({ v: 2 })],
    ['another task', c({ t: other.id })],
    ['a string task id', c({ t: String(task.id) })],
    ['a huge task id', b64(`{"v":1,"t":1e309,"k":"all","p":{},"d":[]}`)],
    ['another kind', c({ k: 'webhook' })],
    ['an unknown kind', c({ k: 'sms' })],
    ['a sort key "0"', c({ p: { w: '0' } })],
    [
      'a sort key with a lone surrogate',
      b64(`{"v":1,"t":${task.id},"k":"all","p":{"w":"${pad(ms, 13)}#\\ud800"},"d":[]}`),
    ],
    ['a number as sort key', c({ p: { w: 5 } })],
    ['a log day other than its key', c({ p: { l: { d: day - 3, s: sk, r: 0 } } })],
    ['a log day as a string', c({ p: { l: { d: String(day), s: sk, r: 0 } } })],
    ['a negative count', c({ p: { n0: { s: sk, r: -1 } } })],
    ['a huge count', c({ p: { n1: { s: sk, r: 2 ** 53 } } })],
    ['a fractional count', c({ p: { n2: { s: sk, r: 0.5 } } })],
    ['an unknown source', c({ p: { x9: sk } })],
    ['a source named __proto__', b64(`{"v":1,"t":${task.id},"k":"all","p":{"__proto__":"${sk}"},"d":[]}`)],
    ['positions as an array', c({ p: [sk] })],
    ['a source done twice', c({ d: ['w', 'w'] })],
    ['an unknown source done', c({ d: ['zz'] })],
    ['sources done as a string', c({ d: 'w' })],
    ['deep arrays as positions', c({ p: { w: JSON.parse(deepArray(100)) } })],
  ];
}

function taskCursors(): [string, string][] {
  return [
    ['an unknown phase', cursorOf({ p: 2, k: 'a#000000100001' })],
    ['a string phase', cursorOf({ p: '0', k: 'a#000000100001' })],
    ['a key without an id', cursorOf({ p: 0, k: 'abc' })],
    ['a key with a short id', cursorOf({ p: 0, k: 'abc#1' })],
    ['a number as key', cursorOf({ p: 0, k: 5 })],
    ['the name phase without a query', cursorOf({ p: 1, k: 'a#000000100001' })],
    ['a key with a lone surrogate', b64('{"p":0,"k":"a\\ud800#000000100001"}')],
    ['a key longer than DynamoDB takes', cursorOf({ p: 0, k: `${'日'.repeat(350)}#000000100001` })],
    ['a place as an array', cursorOf([0, 'a#000000100001'])],
  ];
}

function workflowCursors(): [string, string][] {
  return [
    ['a bound "0"', cursorOf({ u: '0' })],
    ['a number as bound', cursorOf({ u: 5 })],
    ['a bound with a negative time', cursorOf({ u: '-000000001#000000000001' })],
    ['a bound with a tail', cursorOf({ u: '0000000001#000000000001x' })],
    ['a bound as an array', cursorOf(['0000000001#000000000001'])],
  ];
}

beforeAll(async () => {
  await hook.start();
  task = await createTask({
    receiver: { channels: { webhook: `${hook.url}/cursors` } },
    workflow: { enable: true },
  });
  other = await createTask({ receiver: { channels: { webhook: `${hook.url}/other` } } });
  for (let n = 0; n < 3; n++) await report(task, n);
  await newWorkflow(task);
  await newWorkflow(task);
  // Three alarms processed, their events and the PING delivered: every listing has a second page.
  await hook.waitFor(
    (all) => all.filter((r) => r.path === '/cursors' && r.json?.event === 'ALARM').length >= 3,
  );
  for (let i = 0; i < 100; i++) {
    const page = await list('alarms');
    if (page.data.alarms?.length === 1 && page.data.next_cursor) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const name of Object.keys(real) as (keyof typeof real)[]) {
    const page = await list(name);
    expect(page.code, name).toBe(0);
    expect(page.data.next_cursor, name).not.toBe('');
    real[name] = page.data.next_cursor;
  }
  nowMs = (await serviceNow()) * 1000;
  today = Math.floor(nowMs / DAY_MS);
});
afterAll(() => hook.stop());

describe('fuzz: forged cursors on every listing', () => {
  it('refuses each with a 422 naming cursor, never a 5xx', async () => {
    // Arrange
    const names = Object.keys(real) as (keyof typeof real)[];
    const cases: [keyof typeof real, string, string][] = [
      ...alarmCursors().map((c): [keyof typeof real, string, string] => ['alarms', ...c]),
      ...deliveryCursors().map((c): [keyof typeof real, string, string] => ['deliveries', ...c]),
      ...taskCursors().map((c): [keyof typeof real, string, string] => ['tasks', ...c]),
      ...workflowCursors().map((c): [keyof typeof real, string, string] => ['workflows', ...c]),
    ];
    for (const name of names) {
      for (const c of anyListing()) cases.push([name, ...c]);
      // Every other listing's real cursor.
      for (const from of names) if (from !== name) cases.push([name, `a cursor of ${from}`, real[from]]);
    }
    const failures: string[] = [];
    // Act
    for (const [name, label, cursor] of cases) {
      const res = await list(name, cursor);
      // Assert
      const ok =
        res.status === 422 &&
        res.code === 422 &&
        /^cursor /.test(res.msg) &&
        res.data.errors?.[0]?.field === 'cursor';
      if (!ok) failures.push(`${name} ${label}: ${res.status} ${res.code} ${res.msg}`);
    }
    expect(failures).toEqual([]);
    expect(cases.length).toBeGreaterThan(80);
  });

  it('refuses a real cursor used for another task, query or window', async () => {
    // Act
    const answers = [
      await list('deliveries', real.deliveries, { task_id: other.id }),
      await list('deliveries', real.deliveries, { kind: 'notify' }),
      await list('tasks', real.tasks, { q: 'zz' }),
      await list('alarms', real.alarms, {
        from: Math.floor(nowMs / 1000) - 3 * 86_400,
        to: Math.floor(nowMs / 1000) - 2 * 86_400,
      }),
    ];
    // Assert
    for (const res of answers)
      expect([res.status, res.code, res.data.errors?.[0]?.field]).toEqual([422, 422, 'cursor']);
  });

  it('answers a forged cursor that is a valid position like any page', async () => {
    // Arrange: positions the service could have written (the start of a day, an id 0, nothing left).
    const sk = `${pad(nowMs, 13)}#000000000000`;
    const forged: [keyof typeof real, string][] = [
      ['alarms', cursorOf([Math.floor(nowMs / DAY_MS), sk, 0])],
      ['deliveries', cursorOf({ v: 1, t: task.id, k: 'all', p: {}, d: ['w', 'l', 'n0', 'n1', 'n2', 'n3'] })],
      [
        'deliveries',
        cursorOf({
          v: 1,
          t: task.id,
          k: 'all',
          p: { w: '0000000000000#0', n3: { s: sk, r: 100_000 } },
          d: [],
        }),
      ],
      ['tasks', cursorOf({ p: 0, k: '~~~~#000000000000' })],
      ['workflows', cursorOf({ u: '0000000000#000000000000' })],
    ];
    for (const [name, cursor] of forged) {
      // Act
      const res = await list(name, cursor);
      // Assert
      expect([name, res.status, res.code]).toEqual([name, 200, 0]);
    }
  });
});
