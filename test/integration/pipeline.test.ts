import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlarmRecord } from '../../shared/domain/alarms/model.ts';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import type { AlarmMessage } from '../../shared/contracts/messages.ts';
import { publish } from '../../shared/messaging/sqs.ts';
import { api, call, serviceNow, taskAuth } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask, type TaskBody } from '../support/tasks.ts';
import { recentNotificationAttempts } from '../support/notifications.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * The alarm pipeline end to end (API guide §9): alarms reported through POST /alarm/report (or put on
 * the alarm queue directly) are processed by the real consumer on the local stack; the outcome is
 * observed at a real webhook receiver, in the notification consumer's attempt records, and by a
 * test-only read of the per-alarm decision record.
 */
const receiver = new TestReceiver();

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

async function pipelineTask(overrides: TaskBody = {}): Promise<CreatedTask> {
  const { receiver: r, ...rest } = overrides;
  return createTask({
    receiver: { channels: { email: [1], webhook: receiver.url }, ...(r ?? {}) },
    ...rest,
  });
}

async function report(t: CreatedTask, ctn: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn, ...extra },
  });
  return res;
}

async function reportOk(t: CreatedTask, ctn: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const res = await report(t, ctn, extra);
  if (res.code !== 0) throw new Error(`report refused: ${res.code} ${res.msg}`);
  return res.data.uuid as string;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const recordOf = (t: { id: number }, uuid: string) =>
  until<AlarmRecord>(`record ${uuid}`, () => getAlarmRecord(t.id, uuid));

/** The webhook events of a task (PING excluded; each once under the chaos queue, by webhook-id). */
const eventsOf = (t: { id: number }, event?: string): Received[] =>
  eachOnce(
    receiver.received.filter(
      (r) => r.json?.data?.task?.id === t.id && r.json.event !== 'PING' && (!event || r.json.event === event),
    ),
    (r) => r.headers['webhook-id'],
  );

async function waitEvents(t: { id: number }, count: number, event?: string): Promise<Received[]> {
  await receiver.waitFor(() => eventsOf(t, event).length >= count);
  return eventsOf(t, event);
}

/** Lets in-flight side effects land before asserting that nothing more arrived. */
const settle = () => new Promise((r) => setTimeout(r, 400));

/** Notification job ids the notification consumer recorded attempts for (once `count` or more). */
async function jobIdsOf(taskId: number, count: number): Promise<string[]> {
  return until(`${count} notification job(s) of task ${taskId}`, async () => {
    const ids = [...new Set((await recentNotificationAttempts(taskId, 200)).map((a) => a.job_id))].sort();
    return ids.length >= count ? ids : undefined;
  });
}

/** Waits until the notification consumer recorded an attempt of the job. */
const jobDone = (taskId: number, jobId: string) =>
  until(`notification job ${jobId}`, async () =>
    (await recentNotificationAttempts(taskId, 200)).some((a) => a.job_id === jobId) ? true : undefined,
  );

function alarmMessage(t: { id: number }, ctn: Record<string, unknown>): AlarmMessage {
  return {
    kind: 'alarm',
    uuid: randomUUID(),
    task_id: t.id,
    level: 1,
    ctn,
    notice_time: 1_700_000_000,
    reported_at: 1_700_000_000,
  };
}

describe('stored alarms without compression', () => {
  it('stores the alarm, then sends ALARM compress_disable and one job per channel', async () => {
    // Arrange
    const t = await pipelineTask({ receiver: { channels: { email: [1], sms: [2], webhook: receiver.url } } });
    // Act
    const uuid = await reportOk(t, { hostname: 'web-1', disk: 97 }, { level: 2, notice_time: 1_700_000_123 });
    // Assert
    const [ev] = await waitEvents(t, 1);
    const record = await recordOf(t, uuid);
    expect(record).toMatchObject({ outcome: 'compress_disable', notify: 'now', task_id: t.id });
    expect(ev.headers['webhook-id']).toBe(`${t.id}:${uuid}:ALARM`);
    expect(ev.json).toEqual({
      event: 'ALARM',
      type: 'compress_disable',
      data: {
        task: { id: t.id, name: t.name },
        history: {
          id: record.history.id,
          uuid,
          batch: 0,
          metric: '',
          level: 2,
          leve: 2,
          ctn: { hostname: 'web-1', disk: 97 },
          notice_time: 1_700_000_123,
        },
      },
      extra: {},
    });
    expect(record.history.id).toBeGreaterThan(0);
    expect(await jobIdsOf(t.id, 2)).toEqual([
      `${t.id}:${uuid}:not_compress:email`,
      `${t.id}:${uuid}:not_compress:sms`,
    ]);
  });

  it('flag_save_db 0: ALARM not_save_db with msg and nothing stored', async () => {
    const t = await pipelineTask({ flag_save_db: 0 });
    const uuid = await reportOk(t, { a: 1 }, { level: 3, notice_time: 1_700_000_001 });
    const [ev] = await waitEvents(t, 1);
    expect(ev.json).toEqual({
      event: 'ALARM',
      type: 'not_save_db',
      data: {
        task: { id: t.id, name: t.name },
        msg: { uuid, level: 3, leve: 3, ctn: { a: 1 }, notice_time: 1_700_000_001 },
      },
      extra: {},
    });
    expect(await getAlarmRecord(t.id, uuid)).toBeUndefined();
    expect(await jobIdsOf(t.id, 1)).toEqual([`${t.id}:${uuid}:not_compress:email`]);
  });
});

describe('filter (API guide §9.3)', () => {
  const conditions = [{ rule: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay' }], level: 3 }];

  it('whitelist: a match goes on with the condition level; no match is stored (not_match 1) unnotified', async () => {
    const t = await pipelineTask({ filter: { enable: true, mode: 1, not_match: 1, conditions } });
    const kept = await reportOk(t, { app: 'pay' }, { level: 0 });
    const rejected = await reportOk(t, { app: 'web' }, { level: 1 });
    const [ev] = await waitEvents(t, 1);
    expect(ev.json.data.history).toMatchObject({ uuid: kept, level: 3, leve: 3 });
    expect(await recordOf(t, kept)).toMatchObject({ outcome: 'compress_disable', reported_level: 0 });
    expect(await recordOf(t, rejected)).toMatchObject({
      outcome: 'rejected',
      notify: 'none',
      history: { level: 1 },
    });
    await settle();
    expect(eventsOf(t)).toHaveLength(1);
  });

  it('blacklist: a match is dropped (not_match 0), no match goes on with its own level', async () => {
    const t = await pipelineTask({ filter: { enable: true, mode: 2, not_match: 0, conditions } });
    const dropped = await reportOk(t, { app: 'pay' });
    const kept = await reportOk(t, { app: 'web' }, { level: 2 });
    const [ev] = await waitEvents(t, 1);
    expect(ev.json.data.history).toMatchObject({ uuid: kept, level: 2 });
    await recordOf(t, kept);
    await settle();
    expect(await getAlarmRecord(t.id, dropped)).toBeUndefined();
    expect(eventsOf(t)).toHaveLength(1);
  });

  it('level 9 keeps the reported level', async () => {
    const t = await pipelineTask({
      filter: { enable: true, mode: 1, not_match: 0, conditions: [{ ...conditions[0], level: 9 }] },
    });
    const uuid = await reportOk(t, { app: 'pay' }, { level: 1 });
    const [ev] = await waitEvents(t, 1);
    expect(ev.json.data.history).toMatchObject({ uuid, level: 1 });
  });
});

describe('receivers: dispatch and override (API guide §9.7)', () => {
  const dispatch = [
    {
      conditions: [{ rule: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay' }] }],
      receiver: { channels: { sms: [4] } },
    },
    {
      conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '2' }] }],
      receiver: { alarmgroup: [1] },
    },
  ];

  it('lazy mode: the first matching item only; no match: the defaults', async () => {
    const t = await pipelineTask({
      receiver: { channels: { phone: [2], webhook: receiver.url }, dispatch, mode: 1 },
    });
    const both = await reportOk(t, { app: 'pay' }, { level: 3 });
    const second = await reportOk(t, { app: 'web' }, { level: 2 });
    const none = await reportOk(t, { app: 'web' }, { level: 0 });
    expect((await recordOf(t, both)).selection).toEqual({ override: false, dispatch: [0], defaults: false });
    expect((await recordOf(t, second)).selection).toEqual({
      override: false,
      dispatch: [1],
      defaults: false,
    });
    expect((await recordOf(t, none)).selection).toEqual({ override: false, dispatch: [], defaults: true });
    expect(await jobIdsOf(t.id, 3)).toEqual(
      [
        `${t.id}:${both}:not_compress:sms`,
        `${t.id}:${second}:not_compress:email`,
        `${t.id}:${none}:not_compress:phone`,
      ].sort(),
    );
    // The task's webhook gets every alarm event whichever receivers were chosen.
    expect(await waitEvents(t, 3)).toHaveLength(3);
  });

  it('non-lazy mode: every matching item and the defaults, alarm groups merged', async () => {
    const t = await pipelineTask({
      receiver: { channels: { email: [3], webhook: receiver.url }, dispatch, mode: 2 },
    });
    const uuid = await reportOk(t, { app: 'pay' }, { level: 2 });
    expect((await recordOf(t, uuid)).selection).toEqual({
      override: false,
      dispatch: [0, 1],
      defaults: true,
    });
    expect(await jobIdsOf(t.id, 2)).toEqual([
      `${t.id}:${uuid}:not_compress:email`,
      `${t.id}:${uuid}:not_compress:sms`,
    ]);
    const emails = (await recentNotificationAttempts(t.id, 50)).filter((a) => a.channel === 'email');
    // group 1 (users 1, 2) merged with the default e-mail receiver (user 3): one job, three targets.
    expect(new Set(emails.map((a) => a.target)).size).toBe(3);
  });

  it('a report override replaces the task receivers', async () => {
    const t = await pipelineTask({ receiver: { channels: { email: [1], webhook: receiver.url }, dispatch } });
    const uuid = await reportOk(t, { app: 'pay' }, { receiver: { channels: { dingworker: [2] } } });
    expect(await recordOf(t, uuid)).toMatchObject({
      selection: { override: true, dispatch: [], defaults: false },
      receiver: { channels: { dingworker: [2] } },
    });
    expect(await jobIdsOf(t.id, 1)).toEqual([`${t.id}:${uuid}:not_compress:dingworker`]);
  });
});

describe('at-least-once delivery of alarm messages', () => {
  it('the same AlarmMessage delivered several times is processed once: one record, one event', async () => {
    const t = await pipelineTask({
      compress: {
        enable: true,
        method: 4,
        strategy: 3,
        strategy_cycle: 600,
        strategy_count: 2,
        not_match: 1,
      },
    });
    const m = alarmMessage(t, { host: 'x' });
    // Act: twice in one batch, then again after it was processed.
    await publish('alarm', [{ body: m }, { body: m }]);
    const first = await recordOf(t, m.uuid);
    await waitEvents(t, 1);
    await publish('alarm', [{ body: m }]);
    const next = alarmMessage(t, { host: 'y' });
    await publish('alarm', [{ body: next }]);
    // Assert: the next alarm is k = 2 of the window (the copies did not count), and notified.
    expect(await recordOf(t, next.uuid)).toMatchObject({
      k: 2,
      notify: 'now',
      history: { batch: first.history.batch },
    });
    await waitEvents(t, 2);
    await settle();
    expect(await getAlarmRecord(t.id, m.uuid)).toEqual(first);
    const events = eventsOf(t, 'ALARM');
    expect(events.map((e) => e.headers['webhook-id'])).toEqual([
      `${t.id}:${m.uuid}:ALARM`,
      `${t.id}:${next.uuid}:ALARM`,
    ]);
  });
});

describe('tasks that stop or pause', () => {
  // An alarm accepted while the task ran is processed even when the task stops or pauses before the
  // pipeline gets to it: acceptance is the gate (the report endpoint refuses alarms of a stopped or
  // paused task), and an accepted alarm is never lost.
  async function assertAcceptedAlarmProcessed(t: CreatedTask, op: 'stop' | 'pause', code: number) {
    const m = alarmMessage(t, { a: 1 });
    const body = op === 'pause' ? { ...(await taskAuth(t)), time: 600 } : await taskAuth(t);
    expect((await api.put(`/alarmtask/${op}`, body)).code).toBe(0);
    await publish('alarm', [{ body: m }]);
    expect(await recordOf(t, m.uuid)).toMatchObject({ outcome: 'compress_disable', notify: 'now' });
    // ... while the endpoint refuses new reports (ingestion covers the details).
    expect((await report(t, { a: 2 })).code).toBe(code);
  }

  // These tasks have no webhook URL: nothing reads them before they stop (no PING), so the report
  // endpoint's few-second task cache cannot hold them as running.
  it('stopped: an alarm accepted before the stop is still processed', async () => {
    await assertAcceptedAlarmProcessed(await createTask(), 'stop', 4001);
  });

  it('paused: an alarm accepted before the pause is still processed', async () => {
    await assertAcceptedAlarmProcessed(await createTask(), 'pause', 4002);
  });
});

describe('upgrade (API guide §9.5)', () => {
  it('fires once when the count of the trailing interval is reached, to the strategy receivers', async () => {
    const t = await pipelineTask({
      compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 600, not_match: 1 },
      upgrade: {
        enable: true,
        strategies: [
          { interval: 600, count: 3, level: 3, reuse_receiver: 0, receiver: { channels: { sms: [2] } } },
        ],
      },
    });
    const uuids: string[] = [];
    for (let i = 0; i < 5; i++) {
      uuids.push(await reportOk(t, { n: i }));
      await recordOf(t, uuids[i]);
    }
    const [up] = await waitEvents(t, 1, 'UPGRADE');
    const third = await recordOf(t, uuids[2]);
    expect(up.json).toMatchObject({
      event: 'UPGRADE',
      type: 'upgrade',
      data: { task: { id: t.id }, history: { uuid: uuids[2], level: 0, metric: third.history.metric } },
    });
    expect(third.upgrades).toEqual([{ key: '0.600.3', index: 0, zcount: 3 }]);
    expect((await recordOf(t, uuids[4])).upgrades).toEqual([]);
    expect(await jobDone(t.id, `${t.id}:${uuids[2]}:upgrade:0.600.3:sms`)).toBe(true);
    await settle();
    expect(eventsOf(t, 'UPGRADE')).toHaveLength(1);
  });
});

describe('recovery, condition mode (API guide §9.2)', () => {
  const recovery = {
    enable: true,
    mode: 1,
    conditions: [{ rule: [{ field: 'ctn.status', operator: 'eq', threshold: 'ok' }] }],
  };

  it('a recovery alarm is stored, sends RECOVERY and finishes the open workflow of its metric', async () => {
    const t = await pipelineTask({
      compress: {
        enable: true,
        method: 1,
        strategy: 1,
        strategy_cycle: 600,
        not_match: 1,
        conditions: [{ rule: [{ field: 'ctn.host', operator: 'eq-self' }] }],
      },
      workflow: { enable: true },
      recovery,
    });
    const alarm = await reportOk(t, { host: 'db-1', status: 'down' });
    const [generated] = await waitEvents(t, 1, 'WORKFLOW');
    const workflowId = generated.json.data.workflow.id as number;
    const recovered = await reportOk(t, { host: 'db-1', status: 'ok' });
    const [ev] = await waitEvents(t, 1, 'RECOVERY');
    expect(ev.headers['webhook-id']).toBe(`${t.id}:${recovered}:RECOVERY`);
    expect(ev.json).toMatchObject({
      event: 'RECOVERY',
      type: 'recovery',
      data: { task: { id: t.id }, history: { uuid: recovered, ctn: { host: 'db-1', status: 'ok' } } },
    });
    expect(await recordOf(t, recovered)).toMatchObject({
      outcome: 'recovery',
      recovery_metric: (await recordOf(t, alarm)).history.metric,
    });
    const wf = await until('workflow finished', async () => {
      const res = await api.get('/workflow/show', { query: { id: workflowId } });
      return res.data.workflow?.status === 2 ? res.data.workflow : undefined;
    });
    expect(wf.pipelines.at(-1)).toMatchObject({ status: 2, remark: 'recovered', created_by: 0 });
    expect(await jobDone(t.id, `${t.id}:${recovered}:recovery:email`)).toBe(true);
  });

  it('a task that does not store alarms sends RECOVERY not_save_db with msg', async () => {
    const t = await pipelineTask({ flag_save_db: 0, recovery });
    const uuid = await reportOk(t, { status: 'ok' }, { level: 1 });
    const [ev] = await waitEvents(t, 1);
    expect(ev.json).toMatchObject({
      event: 'RECOVERY',
      type: 'not_save_db',
      data: { task: { id: t.id }, msg: { uuid, level: 1, leve: 1, ctn: { status: 'ok' } } },
    });
    expect(await getAlarmRecord(t.id, uuid)).toBeUndefined();
  });
});
