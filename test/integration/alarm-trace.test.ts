import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { api, call, serviceNow } from '../support/client.ts';
import { FakeClient } from '../support/fakes.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { ADMIN_APP } from '../support/seed.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { admin } from './local-child-stack.ts';
import { UNDER_CHAOS } from '../support/chaos.ts';

/**
 * The decision trace end to end (API guide §13.3): alarms walk through the filter (a level override),
 * compression (cycle-count, k of n), upgrade, dispatch, a webhook that fails then recovers, and a
 * webhook event that dies and is redriven; the trace of each alarm, the task's attempt log and the
 * dead-letter queue say what happened, on the local stack with a real receiver.
 */
// biome-ignore lint/suspicious/noExplicitAny: response shapes
type Any = any;

const ADMIN = 1;
const receiver = new TestReceiver();
/** ALARM events of these uuids fail: a number = fail that many times, 'always' = until fixed. */
const failing = new Map<string, number | 'always'>();

beforeAll(async () => {
  receiver.behaviour = (r: Received) => {
    const uuid = r.json?.data?.history?.uuid as string | undefined;
    const rule = uuid && r.json?.event === 'ALARM' ? failing.get(uuid) : undefined;
    if (rule === 'always') return { status: 503 };
    if (typeof rule === 'number' && rule > 0) {
      failing.set(uuid as string, rule - 1);
      return { status: 500 };
    }
    return { status: 200 };
  };
  await receiver.start();
});
afterAll(() => receiver.stop());

async function report(t: CreatedTask, ctn: Record<string, unknown>, level = 1): Promise<string> {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn, level },
  });
  if (res.code !== 0) throw new Error(`report refused: ${res.code} ${res.msg}`);
  return res.data.uuid as string;
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const trace = async (t: { id: number }, uuid: string, uid = ADMIN) =>
  (await api.get<Any>('/alarmtask/alarm/trace', { query: { uid, task_id: t.id, uuid } })).data;
/** The attempt numbers of a trace's attempts, each once (a queue's copy of a message repeats one). */
const numbersOf = (attempts: Any[]) =>
  [...new Set<number>(attempts.map((a: Any) => a.attempt))].sort((a, b) => a - b);
const stage = (tr: Any, name: string) => tr.stages.find((s: Any) => s.stage === name);
const rule = (field: string, operator: string, threshold?: string) => ({
  field,
  operator,
  ...(threshold ? { threshold } : {}),
});

describe('the decision trace of a real alarm', () => {
  it('walks filter, compression, upgrade, dispatch, a failing then recovering webhook and a dead letter', async () => {
    // Arrange: a task that uses every stage
    const t = await createTask({
      permission: { rw: [], ro: [2] },
      filter: {
        enable: true,
        mode: 1,
        conditions: [{ rule: [rule('ctn.app', 'eq', 'pay')], level: 3 }],
        not_match: 0,
      },
      compress: {
        enable: true,
        method: 1,
        conditions: [{ rule: [rule('ctn.host', 'eq-self')] }],
        strategy: 3,
        strategy_cycle: 10,
        strategy_count: 3,
        not_match: 1,
      },
      upgrade: { enable: true, strategies: [{ interval: 5, count: 2, level: 3, reuse_receiver: 1 }] },
      workflow: { enable: true },
      receiver: {
        channels: { email: [1], webhook: `${receiver.url}/hook?token=hush-hush` },
        dispatch: [
          { conditions: [{ rule: [rule('ctn.team', 'eq', 'web')] }], receiver: { channels: { email: [3] } } },
          { conditions: [{ rule: [rule('ctn.team', 'eq', 'db')] }], receiver: { channels: { email: [2] } } },
        ],
        mode: 1,
      },
    });
    await receiver.waitFor((all) => all.some((r) => r.json?.event === 'PING'));

    // Act: three alarms of one host (k = 1 notified, k = 2 compressed and upgraded, k = 3 notified),
    // one the filter drops; the first alarm's webhook fails twice, the third's always.
    const first = await report(t, { app: 'pay', host: 'db-1', team: 'db' });
    failing.set(first, 2);
    await until('the first record', async () => (await trace(t, first)).alarm?.history_id > 0);
    const second = await report(t, { app: 'pay', host: 'db-1', team: 'db' });
    await until('the second record', async () => (await trace(t, second)).alarm?.history_id > 0);
    const third = await report(t, { app: 'pay', host: 'db-1', team: 'db' });
    failing.set(third, 'always');
    const dropped = await report(t, { app: 'web', host: 'web-1' });

    // Assert: the first alarm, delivered on the third try
    const one = await until('the first delivery', async () => {
      const tr = await trace(t, first);
      const w = tr.webhooks?.find((x: Any) => x.event_id === `${t.id}:${first}:ALARM`);
      return w?.attempts.some((a: Any) => a.outcome === 'delivered') ? tr : undefined;
    });
    expect(one.summary).toMatch(/^the 1st alarm of batch \d+, (notified|not notified yet): /);
    // The webhook's query may carry a token: a reader sees its origin and path only.
    expect(JSON.stringify(one)).not.toContain('hush-hush');
    expect(one.configuration).toMatchObject({ changed: false, version_now: one.configuration.version_then });
    expect(stage(one, 'filter')).toMatchObject({
      result: 'kept',
      level_from: 1,
      level_to: 3,
      match: {
        index: 0,
        rules: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay', value: 'pay', ok: true }],
      },
    });
    expect(stage(one, 'compress')).toMatchObject({
      result: 'sent',
      k: 1,
      n: 3,
      batch: one.alarm.history_id,
      match: { index: 0, rules: [{ field: 'ctn.host', operator: 'eq-self', value: 'db-1' }] },
    });
    expect(stage(one, 'compress').window.end - stage(one, 'compress').window.start).toBe(600);
    expect(stage(one, 'upgrade')).toMatchObject({
      result: 'not fired',
      strategies: [{ index: 0, counted: 1, count: 2, fired: false }],
    });
    expect(one.receivers).toMatchObject({
      sets: [{ set: 'd1', text: 'dispatch item 1 matched' }],
      people: { email: [2] },
      misses: [{ index: 0, rules: [{ field: 'ctn.team', value: 'db', ok: false }] }],
    });
    const hook = one.webhooks.find((x: Any) => x.event_id === `${t.id}:${first}:ALARM`);
    if (UNDER_CHAOS) {
      // Copies of its message repeat attempt numbers; held back, its retries may meet the task's
      // circuit opened by the third alarm's failures (held, not sent).
      const failed = hook.attempts.filter((a: Any) => a.outcome === 'failed');
      expect(failed.every((a: Any) => a.status === 500 || /^circuit open/.test(a.error))).toBe(true);
      expect(hook.attempts).toContainEqual(expect.objectContaining({ outcome: 'delivered', status: 200 }));
    } else {
      expect(hook.attempts.map((a: Any) => [a.attempt, a.outcome, a.status])).toEqual([
        [1, 'failed', 500],
        [2, 'failed', 500],
        [3, 'delivered', 200],
      ]);
    }
    const mail = await until('the e-mail', async () => {
      const n = (await trace(t, first)).notifications.find((x: Any) => x.channel === 'email');
      return n?.attempts?.length ? n : undefined;
    });
    expect(mail).toMatchObject({ scene: 'compressed', status: 'delivered' });
    // ... and the trace says what the deliveries came to, per channel
    const settled = await trace(t, first);
    expect(settled.summary).toMatch(
      /^the 1st alarm of batch \d+, notified: email delivered, webhook delivered$/,
    );
    expect(settled.delivery).toMatchObject({
      result: 'delivered',
      reach: 'notified',
      channels: [
        { channel: 'email', result: 'delivered', delivered: 1, failed: 0 },
        { channel: 'webhook', result: 'delivered', delivered: 1, failed: 0 },
      ],
    });
    expect(JSON.stringify(mail.message)).toContain('db-1');
    expect(one.workflow).toMatchObject({ status: 0, history: { uuid: first } });

    // ... the second: compressed away, but it fired the upgrade (2 in 5 minutes)
    const two = await until('the upgrade event', async () => {
      const tr = await trace(t, second);
      return tr.webhooks?.some((x: Any) => x.event === 'UPGRADE') ? tr : undefined;
    });
    expect(two.summary).toMatch(
      /^compressed: the 2nd alarm of batch \d+, not notified by the strategy; (.+, )?webhook delivered$/,
    );
    expect(stage(two, 'upgrade')).toMatchObject({
      result: 'fired',
      strategies: [{ counted: 2, fired: true }],
    });
    expect(two.workflow).toBeNull();

    // ... the dropped one: its reasons, kept in the log although nothing was stored
    const drop = await until('the dropped alarm', async () => {
      const r = await api.get<Any>('/alarmtask/alarm/trace', {
        query: { uid: 2, task_id: t.id, uuid: dropped },
      });
      return r.code === 0 ? r.data : undefined;
    });
    expect(drop.summary).toBe('dropped by the filter (not stored, nobody notified)');
    expect(stage(drop, 'filter')).toMatchObject({
      result: 'dropped',
      misses: [{ index: 0, rules: [{ field: 'ctn.app', threshold: 'pay', value: 'web', ok: false }] }],
    });
    expect(drop.notifications).toEqual([]);
    expect(drop.webhooks).toEqual([]);

    // ... the third: notified as k = 3 of 3; its event dies after 7 attempts
    const dead = await until(
      'the dead letter',
      async () => {
        const res = await api.get<Any>('/delivery/dlq', {
          query: { uid: ADMIN, queue: 'webhook', task_id: t.id },
          app: ADMIN_APP,
        });
        return res.data.dead_letters?.find((d: Any) => d.event_id === `${t.id}:${third}:ALARM`);
      },
      60_000,
    );
    // Its last attempt failed at the receiver (the last attempt is sent whatever the task's circuit says)
    expect(dead).toMatchObject({ attempts: 7, reason: { outcome: 'failed', status: 503 } });
    const before = await trace(t, third);
    // The e-mail reached a person; the deliveries say the webhook failed, and why
    expect(before.summary).toMatch(
      /^the 3rd alarm of batch \d+, notified: email delivered, webhook failed \(HTTP 503\)$/,
    );
    expect(before.delivery).toMatchObject({
      result: 'partly delivered',
      channels: [
        { channel: 'email', result: 'delivered' },
        { channel: 'webhook', result: 'failed', failed: 1, delivered: 0 },
      ],
    });
    const failedBefore = before.webhooks[0].attempts.filter((a: Any) => a.outcome === 'failed');
    expect(UNDER_CHAOS ? numbersOf(failedBefore) : failedBefore).toHaveLength(7);

    // Act: the receiver is fixed; redrive the dead event
    failing.delete(third);
    const moved = await api.post<Any>(
      '/delivery/dlq/redrive',
      { uid: ADMIN, queue: 'webhook', message_id: dead.message_id },
      { app: ADMIN_APP },
    );
    expect(moved.data).toMatchObject({ redriven: 1 });

    // Assert: the trace shows the eighth attempt delivered; the attempt log of the task has them all
    const after = await until('the redriven delivery', async () => {
      const tr = await trace(t, third);
      return tr.webhooks[0].attempts.some((a: Any) => a.outcome === 'delivered') ? tr : undefined;
    });
    // (numbered on from 8; the first ones after the redrive may be held until the task's circuit
    // lets its probe through)
    const numbers = UNDER_CHAOS
      ? numbersOf(after.webhooks[0].attempts)
      : after.webhooks[0].attempts.map((a: Any) => a.attempt);
    expect(numbers.length).toBeGreaterThanOrEqual(8);
    expect(numbers).toEqual(numbers.map((_: number, i: number) => i + 1));
    if (UNDER_CHAOS) expect(after.webhooks[0].attempts.map((a: Any) => a.outcome)).toContain('delivered');
    else expect(after.webhooks[0].attempts.at(-1).outcome).toBe('delivered');
    expect(after.delivery.result).toBe('delivered');
    const log = await api.get<Any>('/alarmtask/deliveries', {
      query: { uid: 2, task_id: t.id, kind: 'webhook', limit: 100 },
    });
    const thirdLog = log.data.deliveries.filter((d: Any) => d.id === `${t.id}:${third}:ALARM`);
    if (UNDER_CHAOS) {
      expect(numbersOf(thirdLog)).toEqual(numbers);
      expect(thirdLog.map((d: Any) => d.outcome)).toContain('delivered');
    } else {
      expect(thirdLog.map((d: Any) => d.outcome).sort()).toEqual(
        [...Array(numbers.length - 1).fill('failed'), 'delivered'].sort(),
      );
    }
    // ... and the history lists all four, the dropped one included
    const history = await api.get<Any>('/alarmtask/alarms', { query: { uid: 2, task_id: t.id } });
    expect(history.data.alarms.map((a: Any) => [a.uuid, a.outcome])).toEqual(
      expect.arrayContaining([
        [first, 'notified'],
        [second, 'compressed'],
        [third, 'notified'],
        [dropped, 'filtered'],
      ]),
    );
  }, 150_000);
});

describe('the words of a trace say whether anyone was reached', () => {
  it('a phone call without a provider and a delivered webhook: nobody reached, and why', async () => {
    // Arrange: the test stack has no voice provider; uid 1 is Ann Lee
    const t = await createTask({ receiver: { channels: { phone: [1], webhook: `${receiver.url}/reach` } } });
    // Act
    const uuid = await report(t, { host: 'reach-1' });
    const tr = await until('the settled deliveries', async () => {
      const x = await trace(t, uuid);
      return x.delivery?.channels.length === 2 && x.delivery.result !== 'pending' ? x : undefined;
    });
    // Assert
    expect(tr.summary).toBe('nobody reached: phone skipped (not configured), webhook delivered');
    expect(tr.delivery).toMatchObject({
      result: 'partly delivered',
      reach: 'nobody reached',
      channels: [
        { channel: 'phone', result: 'skipped', reasons: { skipped: ['not configured'] } },
        { channel: 'webhook', result: 'delivered' },
      ],
    });
    expect(tr.users).toEqual([{ uid: 1, username: 'Ann Lee' }]);
  });
});

describe('a notification that needed a retry', () => {
  it('shows the deferred e-mail and its retry in the trace', async () => {
    // Arrange: e-mail to Ann Lee (uid 1); the SMTP server defers the first mail of this alarm (451)
    const t = await createTask({ receiver: { channels: { email: [1] } } });
    const marker = `deferred-${t.id}`;
    await new FakeClient(inject('fakes').url).script('smtp', [{ smtpCode: 451, match: marker }]);
    // Act
    const uuid = await report(t, { host: marker });
    const tr = await until('the retried e-mail delivered', async () => {
      const x = await trace(t, uuid);
      const attempts = x.notifications?.[0]?.attempts ?? [];
      return attempts.some((a: Any) => a.outcome === 'delivered') ? x : undefined;
    });
    // Assert: one e-mail job, a failed attempt, then the delivered one
    expect(tr.notifications).toHaveLength(1);
    expect(tr.notifications[0].attempts.map((a: Any) => [a.outcome, a.code ?? null])).toEqual([
      ['failed', 'smtp_451'],
      ['delivered', '250'],
    ]);
    expect(tr.delivery.channels).toEqual([
      expect.objectContaining({ channel: 'email', result: 'delivered' }),
    ]);
  });
});

describe('npm run admin -- alarms | trace | tasks | workflows | deliveries | dlq', () => {
  it('prints the same views as the API, as tables and as JSON', async () => {
    // Arrange: a task whose one alarm opens a workflow
    const stateFile = inject('stack').stateFile;
    const t = await createTask({
      workflow: { enable: true },
      compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 5 },
      receiver: { channels: { email: [1], webhook: `${receiver.url}/cli?token=hush-cli` } },
    });
    const uuid = await report(t, { host: 'cli-1', msg: 'disk full' });
    // ... whose e-mail is delivered and whose webhook event fails until it is dead-lettered
    failing.set(uuid, 'always');
    const deadLetter = await until(
      'the dead webhook event',
      async () =>
        (
          await api.get<Any>('/delivery/dlq', {
            query: { uid: ADMIN, queue: 'webhook', task_id: t.id },
            app: ADMIN_APP,
          })
        ).data.dead_letters?.find((d: Any) => d.event_id === `${t.id}:${uuid}:ALARM`),
      60_000,
    );
    await until('the alarm and its e-mail', async () => {
      const tr = await trace(t, uuid);
      return tr.workflow && tr.notifications[0]?.status === 'delivered';
    });
    // Act
    const alarms = await admin(stateFile, 'alarms', String(t.id));
    const json = await admin(stateFile, 'trace', String(t.id), uuid, '--json');
    const text = await admin(stateFile, 'trace', String(t.id), uuid);
    const tasks = await admin(stateFile, 'tasks', '--q', t.name);
    const workflows = await admin(stateFile, 'workflows', String(t.id), '--status', '0');
    const deliveries = await admin(stateFile, 'deliveries', String(t.id), '--kind', 'notify', '--json');
    const dlq = await admin(stateFile, 'dlq', 'notify', '--task', String(t.id));
    const bad = await admin(stateFile, 'alarms', String(t.id), '--level', '7');
    // Assert
    expect(alarms.code, alarms.stderr).toBe(0);
    expect(alarms.stdout).toMatch(new RegExp(`${uuid}\\s+\\d+\\s+warning\\s+notified`));
    // The default receivers include the webhook, shown without its query (it may carry a token).
    expect(json.stdout).not.toContain('hush-cli');
    expect(JSON.parse(json.stdout).receivers.people.webhook).toBe(`${receiver.url}/cli?…`);
    expect(JSON.parse(json.stdout)).toMatchObject({
      alarm: { uuid, task: { id: t.id } },
      summary: expect.stringMatching(/^the 1st alarm of batch \d+, notified: /),
    });
    expect(text.stdout).toContain(`alarm ${uuid} of task ${t.id}`);
    expect(text.stdout).toMatch(/compress\s+sent\s+full compression/);
    // People are named as the directory names them
    expect(text.stdout).toContain('\n  email: Ann Lee (uid 1)\n');
    // The decision, then what the deliveries came to: the webhook failed, so not all were delivered.
    expect(text.stdout).toMatch(
      /\n {2}=> the 1st alarm of batch \d+, notified: email delivered, webhook failed \(HTTP 503\)\n {2}delivery: partly delivered\n/,
    );
    expect(tasks.stdout).toContain(t.name);
    expect(workflows.stdout).toContain(uuid);
    expect(JSON.parse(deliveries.stdout).deliveries.map((d: Any) => d.id)).toContain(
      `${t.id}:${uuid}:compressed:email`,
    );
    expect(dlq.code, dlq.stderr).toBe(0);
    expect(dlq.stdout).toContain('(none)');
    expect([bad.code, bad.stderr.trim()]).toEqual([
      1,
      'refused, nothing was changed:\n  level: must be one of 0, 1, 2, 3',
    ]);
    // Clean up: the receiver is fixed and the dead event redriven.
    failing.delete(uuid);
    const moved = await api.post<Any>(
      '/delivery/dlq/redrive',
      { uid: ADMIN, queue: 'webhook', message_id: deadLetter.message_id },
      { app: ADMIN_APP },
    );
    expect(moved.data).toMatchObject({ redriven: 1 });
  }, 60_000);
});
