import { describe, expect, it } from 'vitest';
import { testTask as baseTask } from '../tasks/test-task.ts';

/** The test task has a webhook, so its events are queued (they are not for a task without one). */
const testTask: typeof baseTask = (over = {}) =>
  baseTask({ receiver: { channels: { email: [1], webhook: 'https://hooks.example.com/in' } }, ...over });
import type { AlarmMessage, NotificationJob, WebhookBody } from '../../messaging/messages.ts';
import type { DueItem } from '../due/repository.ts';
import type { Task } from '../tasks/model.ts';
import { computeMetric } from './compress.ts';
import type { AlarmRecord, MetricState } from './model.ts';
import {
  FLUSH_KIND,
  flushCompressWindow,
  type PipelineDeps,
  parseAlarmMessage,
  processAlarmBatch,
  RECOVERY_DELAY_KIND,
  runRecoveryDelay,
} from './pipeline.ts';
import type { AlarmLogEntry } from './log.ts';
import type { CommitResult, MetricCommit } from './repository.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';

/** A delivered first attempt of an event, as the webhook delivery records it. */
const firstAttempt = (taskId: number, eventId: string): WebhookAttempt => ({
  event_id: eventId,
  task_id: taskId,
  attempt: 1,
  event: 'ALARM',
  type: 'compress_disable',
  outcome: 'delivered',
  status: 200,
  duration_ms: 1,
  at_ms: 1_700_000_000_000,
  at: 1_700_000_000,
});

/**
 * In-memory stand-ins for the adapters, with the same conditional semantics as the DynamoDB
 * repository (records written once, state conditioned on its version, transactions all-or-nothing).
 */
function fakes(task: Task | undefined, opts: { conflicts?: number } = {}) {
  const records = new Map<string, AlarmRecord>();
  const states = new Map<string, MetricState>();
  const buckets = new Map<string, number>();
  const dues: DueItem[] = [];
  const events: { taskId: number; body: WebhookBody; eventId: string; replaySinceMs?: number }[] = [];
  const jobs: NotificationJob[] = [];
  const puts: number[] = [];
  const log: string[] = [];
  const workflows: string[] = [];
  const finished: string[] = [];
  const logged: AlarmLogEntry[] = [];
  const loggedDeliveries: WebhookAttempt[] = [];
  const logTimes: (number | undefined)[] = [];
  let conflicts = opts.conflicts ?? 0;
  let nextId = 1000;
  let clock = 1_700_000_000;
  let elapsedMs = 0;
  const handedBack: AlarmMessage[] = [];
  let failPublish = 0;
  let failLog = 0;
  const deps: PipelineDeps = {
    now: () => clock,
    getTask: async () => task,
    nextHistoryId: async () => ++nextId,
    recordAlarm: async () => {
      throw new Error('a batch stores its records together');
    },
    getAlarmGroups: async () => [],
    publishJobs: async (j) => {
      jobs.push(...j);
      log.push(...j.map((x) => `job ${x.job_id}`));
    },
    publishEvents: async (taskId, e) => {
      if (failPublish > 0) {
        failPublish--;
        throw new Error('queue down');
      }
      for (const x of e) {
        events.push({ taskId, body: x.body, eventId: x.eventId ?? '' });
        log.push(`event ${x.eventId}`);
      }
    },
    sendEffects: async ({ webhook, notify }, delivered) => {
      if (webhook.length > 0 && failPublish > 0) {
        failPublish--;
        throw new Error('queue down');
      }
      for (const b of webhook) {
        for (const m of b.events) {
          events.push({
            taskId: b.task_id,
            body: m.body,
            eventId: m.event_id,
            replaySinceMs: m.replay_since_ms,
          });
          log.push(`event ${m.event_id}`);
        }
      }
      jobs.push(...notify);
      log.push(...notify.map((x) => `job ${x.job_id}`));
      // The settling first attempts: each event delivered.
      delivered.push(...webhook.flatMap((b) => b.events.map((m) => firstAttempt(b.task_id, m.event_id))));
    },
    createWorkflow: async ({ history }) => {
      workflows.push(history.uuid);
      log.push(`workflow ${history.uuid}`);
      return { id: 1, created: true };
    },
    finishWorkflowsOfMetric: async ({ metric }) => {
      finished.push(metric);
      return [];
    },
    sleep: async (ms) => {
      elapsedMs += ms;
    },
    clockMs: () => elapsedMs,
    contentionMs: () => 20_000,
    handBack: async (alarms) => {
      handedBack.push(...alarms);
    },
    logAlarms: async (entries, deliveries = [], atMs) => {
      logTimes.push(atMs);
      if (failLog > 0) {
        failLog--;
        throw new Error('table down');
      }
      logged.push(...entries);
      loggedDeliveries.push(...deliveries);
    },
    repo: {
      getAlarmRecord: async (taskId: number, uuid: string) => records.get(`${taskId}#${uuid}`),
      putAlarmRecords: async (rs: AlarmRecord[]) => {
        puts.push(rs.length);
        return rs.map((r) => {
          if (records.has(`${r.task_id}#${r.uuid}`)) return 'exists' as const;
          records.set(`${r.task_id}#${r.uuid}`, structuredClone(r));
          return 'created' as const;
        });
      },
      getMetricState: async (taskId: number, metric: string) =>
        structuredClone(states.get(`${taskId}#${metric}`)),
      queryMetricMinutes: async (taskId: number, metric: string, from: number, to: number) => {
        const out = new Map<number, number>();
        for (let m = from; m <= to; m++) {
          const n = buckets.get(`${taskId}#${metric}#${m}`);
          if (n) out.set(m, n);
        }
        return out;
      },
      commitMetricGroup: async (c: MetricCommit): Promise<CommitResult> => {
        const key = `${c.state.task_id}#${c.state.metric}`;
        if (conflicts > 0) {
          conflicts--;
          return { ok: false, duplicates: [], conflict: true };
        }
        if (states.get(key)?.version !== c.expectedVersion)
          return { ok: false, duplicates: [], conflict: true };
        const duplicates = c.records.filter((r) => records.has(`${r.task_id}#${r.uuid}`)).map((r) => r.uuid);
        if (duplicates.length) return { ok: false, duplicates, conflict: false };
        states.set(key, structuredClone(c.state));
        if (c.bucket) {
          const bk = `${key}#${c.bucket.minute}`;
          buckets.set(bk, (buckets.get(bk) ?? 0) + c.bucket.add);
        }
        for (const r of c.records) records.set(`${r.task_id}#${r.uuid}`, structuredClone(r));
        dues.push(...c.dues);
        return { ok: true };
      },
      clearRecoveryPending: async (taskId: number, metric: string, version: number) => {
        const s = states.get(`${taskId}#${metric}`);
        if (!s || s.version !== version) return false;
        states.set(`${taskId}#${metric}`, { ...s, recovery_pending: false, version: version + 1 });
        return true;
      },
      reserveHistoryIds: async () => 0,
    } as unknown as PipelineDeps['repo'],
  };
  return {
    deps,
    handedBack,
    records,
    puts,
    states,
    dues,
    events,
    jobs,
    log,
    workflows,
    finished,
    logged,
    loggedDeliveries,
    logTimes,
    advance: (s: number) => {
      clock += s;
    },
    failNextPublish: (n = 1) => {
      failPublish = n;
    },
    failNextLog: (n = 1) => {
      failLog = n;
    },
  };
}

let seq = 0;
function alarm(ctn: Record<string, unknown>, over: Partial<AlarmMessage> = {}): AlarmMessage {
  seq++;
  return {
    kind: 'alarm',
    uuid: `u-${seq}`,
    task_id: 42,
    level: 1,
    ctn,
    notice_time: 1_700_000_000,
    reported_at: 1_700_000_000,
    ...over,
  };
}
const msg = (a: AlarmMessage) => ({ id: `m-${a.uuid}`, body: JSON.stringify(a) });

const full = {
  enable: true,
  method: 4 as const,
  strategy: 1 as const,
  strategy_cycle: 1,
  not_match: 1 as const,
};

describe('parseAlarmMessage', () => {
  it('accepts an AlarmMessage and refuses anything else', () => {
    const a = alarm({ x: 1 });
    expect(parseAlarmMessage(JSON.stringify(a))).toEqual(a);
    expect(parseAlarmMessage('{nope')).toBeUndefined();
    expect(parseAlarmMessage('null')).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, kind: 'webhook' }))).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, ctn: [1] }))).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, level: 4 }))).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, task_id: '42' }))).toBeUndefined();
  });
});

describe('processAlarmBatch', () => {
  it('stores, then notifies with ids derived from the uuid (compression off)', async () => {
    const f = fakes(testTask());
    const a = alarm({ host: 'h' });
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    const rec = f.records.get(`42#${a.uuid}`);
    expect(rec).toMatchObject({
      outcome: 'compress_disable',
      notify: 'now',
      history: { id: 1001, uuid: a.uuid },
    });
    expect(f.events).toEqual([
      {
        taskId: 42,
        eventId: `42:${a.uuid}:ALARM`,
        body: {
          event: 'ALARM',
          type: 'compress_disable',
          data: {
            task: { id: 42, name: 'orders' },
            history: expect.objectContaining({ id: 1001, uuid: a.uuid }),
          },
          extra: {},
        },
      },
    ]);
    expect(f.jobs.map((j) => [j.job_id, j.scene])).toEqual([
      [`42:${a.uuid}:not_compress:email`, 'not_compress'],
    ]);
  });

  it('a redelivered alarm keeps its first record and sends the same ids again, marked as a replay', async () => {
    const f = fakes(testTask({ compress: full }));
    const a = alarm({ host: 'h' });
    await processAlarmBatch([msg(a)], f.deps);
    await processAlarmBatch([msg(a)], f.deps);
    expect(f.records.size).toBe(1);
    const state = [...f.states.values()][0];
    expect(state.window?.k).toBe(1);
    expect(state.version).toBe(1);
    expect(f.events.map((e) => e.eventId)).toEqual([`42:${a.uuid}:ALARM`, `42:${a.uuid}:ALARM`]);
    // The deliverer sends the replay only if the first was not delivered since the record was written.
    const processedMs = [...f.records.values()][0].processed_at * 1000;
    expect(f.events.map((e) => e.replaySinceMs)).toEqual([undefined, processedMs - 1000]);
    expect(f.jobs.map((j) => j.replay)).toEqual([undefined, true]);
  });

  it('logs every processed alarm with its decision; the reasons of an unstored one travel in its entry', async () => {
    // Arrange: a whitelist on ctn.app (pay: kept at level 3), compression by ctn.host, one dispatch item.
    const f = fakes(
      testTask({
        filter: {
          enable: true,
          mode: 1,
          conditions: [{ rule: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay' }], level: 3 }],
        },
        compress: {
          ...full,
          method: 1,
          conditions: [{ rule: [{ field: 'ctn.host', operator: 'eq-self' }] }],
        },
        upgrade: { enable: true, strategies: [{ interval: 5, count: 2, level: 3, reuse_receiver: 1 }] },
      }),
    );
    const kept = alarm({ app: 'pay', host: 'h1' });
    const second = alarm({ app: 'pay', host: 'h1' });
    const dropped = alarm({ app: 'web', host: 'h1' });
    // Act
    expect(await processAlarmBatch([msg(kept), msg(second), msg(dropped)], f.deps)).toEqual([]);
    // Assert: the log has all three; the filtered one has no record, and its entry says why.
    const byUuid = new Map(f.logged.map((e) => [e.uuid, e]));
    expect(byUuid.get(dropped.uuid)).toMatchObject({
      decision: 'drop',
      stored: false,
      history_id: 0,
      level: 1,
    });
    expect(byUuid.get(dropped.uuid)?.why?.filter).toMatchObject({
      mode: 'whitelist',
      kept: false,
      conditions: 1,
      misses: [
        {
          index: 0,
          rules: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay', value: 'web', ok: false }],
        },
      ],
    });
    expect(f.records.has(`42#${dropped.uuid}`)).toBe(false);
    expect(byUuid.get(kept.uuid)).toMatchObject({
      decision: 'compressed',
      notify: 'now',
      k: 1,
      level: 3,
      stored: true,
    });
    expect(byUuid.get(kept.uuid)?.why).toBeUndefined();
    expect(byUuid.get(second.uuid)).toMatchObject({ notify: 'none', k: 2, upgrades: 1 });
    // The record keeps the reasons, the window and the upgrade counts.
    const rec = f.records.get(`42#${second.uuid}`);
    expect(rec?.why?.filter).toMatchObject({ kept: true, level_from: 1, level_to: 3, match: { index: 0 } });
    expect(rec?.why?.compress).toMatchObject({
      method: 'condition',
      strategy: 'cycle',
      match: { index: 0, rules: [{ field: 'ctn.host', operator: 'eq-self', value: 'h1', ok: true }] },
    });
    expect(rec?.window).toEqual({ start: 1_700_000_000, end: 1_700_000_060 });
    expect(rec?.upgrade_counts).toEqual([2]);
    expect(rec?.expires_at).toBe(1_700_000_000 + 90 * 86_400);
  });

  it('never retries a batch for its log: a log write that keeps failing costs history entries, not a resend', async () => {
    // Arrange: a task that stores nothing (a resend of its alarm would be a new notification)
    const f = fakes(testTask({ flag_save_db: 0 }));
    const a = alarm({ host: 'h' });
    f.failNextLog(3);
    // Act
    const failed = await processAlarmBatch([msg(a)], f.deps);
    // Assert: acknowledged and sent once; the log entry is lost (three attempts)
    expect(failed).toEqual([]);
    expect(f.events.map((e) => e.eventId)).toEqual([`42:${a.uuid}:ALARM`]);
    expect(f.logged).toEqual([]);
  });

  it('retries a failed log write: a passing failure loses nothing', async () => {
    const f = fakes(testTask());
    const a = alarm({ host: 'h' });
    f.failNextLog(2);
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    expect(f.logged.map((e) => e.uuid)).toEqual([a.uuid]);
  });

  it("keeps a compressed alarm's record as long as its window's flush and its metric's recovery may read it", async () => {
    // Arrange: retention 1 day, a delay window of 3 days, delay recovery after 2 days
    const f = fakes(
      testTask({
        alarm_retention_days: 1,
        compress: { ...full, strategy: 2, strategy_cycle: 3 * 1440 },
        recovery: { enable: true, mode: 2, delay_interval: 2 * 1440 },
      }),
    );
    const a = alarm({ host: 'h' });
    // Act
    await processAlarmBatch([msg(a)], f.deps);
    // Assert: the window end plus a paused task's longest hold and a day
    const rec = f.records.get(`42#${a.uuid}`);
    expect(rec?.expires_at).toBe(1_700_000_000 + 3 * 86_400 + 8 * 86_400);
  });

  it('a consumer that failed after the commit loses nothing: the retry re-runs the side effects only', async () => {
    const f = fakes(testTask({ compress: full }));
    const a = alarm({ host: 'h' });
    f.failNextPublish();
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([`m-${a.uuid}`]);
    expect(f.events).toEqual([]);
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    expect(f.events.map((e) => e.body.type)).toEqual(['compressed']);
    expect([...f.states.values()][0].window?.k).toBe(1);
  });

  it.each([
    ['not compressed', {}],
    ['compressed', { compress: full }],
  ])("processes a uuid reused by another task as that task's own alarm (%s)", async (_name, over) => {
    // Arrange: task 42 recorded the uuid; later task 43 reports the same (client-chosen) uuid
    const f = fakes(testTask(over));
    const a = alarm({ secret_of_42: 'x' });
    await processAlarmBatch([msg(a)], f.deps);
    f.deps.getTask = async (id) =>
      testTask({
        ...over,
        id,
        name: 'other',
        receiver: { channels: { sms: [2], webhook: 'https://x.example/h' } },
      });
    // Act
    const failed = await processAlarmBatch([msg({ ...a, task_id: 43, ctn: { mine: 1 } })], f.deps);
    // Assert: task 43 gets its own record and its own event; task 42's record is intact
    expect(failed).toEqual([]);
    expect(f.records.get(`42#${a.uuid}`)?.history.ctn).toEqual({ secret_of_42: 'x' });
    expect(f.records.get(`43#${a.uuid}`)?.history.ctn).toEqual({ mine: 1 });
    const mine = f.events.filter((e) => e.taskId === 43);
    expect(mine).toHaveLength(1);
    expect(JSON.stringify(mine[0].body)).not.toContain('secret_of_42');
  });

  it('copies of one alarm in one batch are processed once and acknowledged together', async () => {
    const f = fakes(testTask({ compress: full }));
    const a = alarm({ host: 'h' });
    const copies = [msg(a), { ...msg(a), id: 'copy' }];
    expect(await processAlarmBatch(copies, f.deps)).toEqual([]);
    expect(f.records.size).toBe(1);
    expect(f.events).toHaveLength(1);
    const g = fakes(testTask());
    g.failNextPublish();
    const b = alarm({ host: 'h' });
    const failed = await processAlarmBatch([msg(b), { ...msg(b), id: 'copy-b' }], g.deps);
    expect(failed).toEqual([`m-${b.uuid}`, 'copy-b']);
  });

  it('retries a commit that lost a race, then succeeds', async () => {
    const f = fakes(testTask({ compress: full }), { conflicts: 3 });
    const a = alarm({ host: 'h' });
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    expect(f.records.get(`42#${a.uuid}`)?.k).toBe(1);
  });

  it('reports the whole group when its commit keeps failing while the state never moves (not contention)', async () => {
    const f = fakes(testTask({ compress: full }), { conflicts: 100_000 });
    const [a, b] = [alarm({ n: 1 }), alarm({ n: 2 })];
    expect((await processAlarmBatch([msg(a), msg(b)], f.deps)).sort()).toEqual(
      [`m-${a.uuid}`, `m-${b.uuid}`].sort(),
    );
    expect(f.records.size).toBe(0);
    expect(f.handedBack).toEqual([]);
  });

  it('a batch of one metric advances one window in order; a duplicate in it is only replayed', async () => {
    const f = fakes(testTask({ compress: { ...full, strategy: 3, strategy_count: 2 } }));
    const first = alarm({ n: 0 });
    await processAlarmBatch([msg(first)], f.deps);
    const more = [alarm({ n: 1 }), alarm({ n: 2 }), alarm({ n: 3 })];
    expect(await processAlarmBatch([msg(first), ...more.map(msg)], f.deps)).toEqual([]);
    expect([first, ...more].map((a) => f.records.get(`42#${a.uuid}`)?.k)).toEqual([1, 2, 1, 2]);
    expect([first, ...more].map((a) => f.records.get(`42#${a.uuid}`)?.notify)).toEqual([
      'now',
      'now',
      'now',
      'now',
    ]);
    expect(f.records.size).toBe(4);
  });

  it('skips malformed messages (reported for the DLQ) and alarms of deleted tasks', async () => {
    const f = fakes(testTask());
    expect(await processAlarmBatch([msg(alarm({ x: 1 })), { id: 'bad', body: '{' }], f.deps)).toEqual([
      'bad',
    ]);
    expect(f.events).toHaveLength(1);

    const gone = fakes(undefined);
    expect(await processAlarmBatch([msg(alarm({ x: 1 }))], gone.deps)).toEqual([]);
    expect(gone.events).toEqual([]);
  });

  it.each([
    ['stopped', { status: 0 as const }],
    ['paused', { status: 2 as const, paused_until: 1_700_000_100 }],
  ])('processes an alarm accepted before its task was %s', async (_name, over) => {
    const f = fakes(testTask(over));
    expect(await processAlarmBatch([msg(alarm({ x: 1 }))], f.deps)).toEqual([]);
    expect(f.events).toHaveLength(1);
    expect(f.records.size).toBe(1);
  });

  it('runs the stages in order: upgrade, workflow, notify', async () => {
    const f = fakes(
      testTask({
        compress: full,
        workflow: { enable: true },
        upgrade: {
          enable: true,
          strategies: [
            { interval: 5, count: 1, level: 3, reuse_receiver: 0, receiver: { channels: { sms: [4] } } },
          ],
        },
      }),
    );
    const a = alarm({ x: 1 });
    await processAlarmBatch([msg(a)], f.deps);
    // The workflow is created inline; the batch's events and jobs are queued after, in stage order.
    expect(f.log).toEqual([
      `workflow ${a.uuid}`,
      `event 42:${a.uuid}:UPGRADE:0.5.1`,
      `event 42:${a.uuid}:ALARM`,
      `job 42:${a.uuid}:upgrade:0.5.1:sms`,
      `job 42:${a.uuid}:compressed:email`,
    ]);
    const upgradeJob = f.jobs.find((j) => j.scene === 'upgrade');
    expect(upgradeJob?.context.context).toEqual({
      rule: { interval: 5, count: 1, level: 3, reuse_receiver: 0 },
      zcount: 1,
    });
  });

  it('queues no webhook events for a task without a webhook URL (its jobs still go)', async () => {
    const f = fakes(baseTask());
    const a = alarm({ x: 1 });
    const failed = await processAlarmBatch([msg(a)], f.deps);
    expect(failed).toEqual([]);
    expect(f.events).toEqual([]);
    expect(f.jobs.map((j) => j.job_id)).toEqual([
      `42:${a.uuid}:compress_disable:email`.replace('compress_disable', 'not_compress'),
    ]);
  });

  it('queues the effects of a whole batch together, in parallel batches, after every alarm is recorded', async () => {
    const f = fakes(testTask());
    const batch = Array.from({ length: 10 }, (_, i) => alarm({ i }));
    let recordsAtFlush = -1;
    const send = f.deps.sendEffects;
    f.deps.sendEffects = async (m, delivered) => {
      recordsAtFlush = f.records.size;
      return send(m, delivered);
    };
    await processAlarmBatch(batch.map(msg), f.deps);
    expect(recordsAtFlush).toBe(10);
    expect(f.events).toHaveLength(10);
    // The ten records were stored in one request.
    expect(f.puts).toEqual([10]);
  });

  it('writes the alarm log and the delivery log of the first attempts in one write, after the effects', async () => {
    const f = fakes(testTask());
    const batch = [alarm({ i: 1 }), alarm({ i: 2 })];
    const order: string[] = [];
    const { sendEffects, logAlarms } = f.deps;
    f.deps.sendEffects = async (m, delivered) => {
      order.push('effects');
      return sendEffects(m, delivered);
    };
    f.deps.logAlarms = async (entries, deliveries) => {
      order.push(`log ${entries.length} alarms, ${deliveries?.length} deliveries`);
      return logAlarms(entries, deliveries);
    };
    await processAlarmBatch(batch.map(msg), f.deps);
    expect(order).toEqual(['effects', 'log 2 alarms, 2 deliveries']);
    expect(f.loggedDeliveries.map((a) => a.event_id)).toEqual(f.events.map((e) => e.eventId));
    expect(f.logged.map((e) => e.uuid).sort()).toEqual(batch.map((a) => a.uuid).sort());
  });

  it('retries a failed log write with the same time (the same item keys: overwritten, not copied)', async () => {
    const f = fakes(testTask());
    f.failNextLog(2);
    await processAlarmBatch([msg(alarm({ i: 1 }))], f.deps);
    expect(f.logged).toHaveLength(1);
    expect(f.logTimes).toHaveLength(3);
    expect(new Set(f.logTimes).size).toBe(1);
    expect(f.logTimes[0]).toEqual(expect.any(Number));
  });

  it('still logs the first attempts it made when the effects fail, and retries the batch without its alarm log', async () => {
    // Arrange: the events go out, then the notification jobs cannot be queued
    const f = fakes(testTask());
    const batch = [alarm({ i: 1 }), alarm({ i: 2 })];
    const { sendEffects } = f.deps;
    f.deps.sendEffects = async (m, delivered) => {
      await sendEffects({ ...m, notify: [] }, delivered);
      throw new Error('notify queue down');
    };
    // Act
    const failed = await processAlarmBatch(batch.map(msg), f.deps);
    // Assert
    expect(failed).toEqual(batch.map((a) => `m-${a.uuid}`));
    expect(f.loggedDeliveries.map((a) => a.event_id)).toEqual(f.events.map((e) => e.eventId));
    expect(f.loggedDeliveries).toHaveLength(2);
    expect(f.logged).toEqual([]);
  });

  it('flag_save_db 0: ALARM not_save_db with msg, nothing stored', async () => {
    const f = fakes(testTask({ flag_save_db: 0, compress: full }));
    const a = alarm({ x: 1 }, { level: 2 });
    await processAlarmBatch([msg(a)], f.deps);
    expect(f.records.size).toBe(0);
    expect(f.events[0].body).toEqual({
      event: 'ALARM',
      type: 'not_save_db',
      data: {
        task: { id: 42, name: 'orders' },
        msg: { uuid: a.uuid, level: 2, leve: 2, ctn: { x: 1 }, notice_time: 1_700_000_000 },
      },
      extra: {},
    });
  });

  it('a condition recovery is stored and finishes the open workflows of its metric', async () => {
    const recovery = {
      enable: true,
      mode: 1 as const,
      conditions: [{ rule: [{ field: 'ctn.status', operator: 'eq', threshold: 'ok' }] }],
    };
    const f = fakes(testTask({ compress: full, recovery }));
    const a = alarm({ status: 'ok' });
    await processAlarmBatch([msg(a)], f.deps);
    expect(f.records.get(`42#${a.uuid}`)?.outcome).toBe('recovery');
    expect(f.events.map((e) => [e.body.event, e.body.type, e.eventId])).toEqual([
      ['RECOVERY', 'recovery', `42:${a.uuid}:RECOVERY`],
    ]);
    expect(f.jobs.map((j) => j.scene)).toEqual(['recovery']);
    expect(f.finished).toEqual([
      computeMetric(42, full, { ctn: { status: 'ok' }, level: 1, notice_time: 0 }),
    ]);
    expect(f.states.size).toBe(0);
  });
});

describe('due work', () => {
  it('compress-flush notifies the window opener once its window ended', async () => {
    const f = fakes(testTask({ compress: { ...full, strategy: 2, strategy_cycle: 5 } }));
    const [a, b] = [alarm({ n: 1 }), alarm({ n: 2 })];
    await processAlarmBatch([msg(a), msg(b)], f.deps);
    expect(f.events).toEqual([]);
    expect(f.dues.map((d) => [d.kind, d.due_at, d.payload.uuid])).toEqual([
      [FLUSH_KIND, 1_700_000_300, a.uuid],
    ]);
    expect(await flushCompressWindow(f.dues[0], 1_700_000_300, f.deps)).toBeUndefined();
    expect(f.events.map((e) => [e.body.type, e.eventId])).toEqual([['compressed', `42:${a.uuid}:ALARM`]]);
  });

  it('compress-flush holds while the task is paused', async () => {
    const f = fakes(testTask({ status: 2, paused_until: 1_700_000_900 }));
    const item: DueItem = { kind: FLUSH_KIND, ref: 'r', due_at: 0, payload: { task_id: 42, uuid: 'x' } };
    expect(await flushCompressWindow(item, 1_700_000_000, f.deps)).toEqual({ reschedule: 1_700_000_900 });
  });

  it('recovery-delay re-arms while alarms keep coming, then recovers the last alarm once', async () => {
    const task = testTask({ compress: full, recovery: { enable: true, mode: 2, delay_interval: 2 } });
    const f = fakes(task);
    const a = alarm({ n: 1 });
    await processAlarmBatch([msg(a)], f.deps);
    const due = f.dues.find((d) => d.kind === RECOVERY_DELAY_KIND) as DueItem;
    expect(due.due_at).toBe(1_700_000_120);
    f.advance(60);
    const b = alarm({ n: 2 });
    await processAlarmBatch([msg(b)], f.deps);
    expect(f.dues.filter((d) => d.kind === RECOVERY_DELAY_KIND)).toHaveLength(1);
    expect(await runRecoveryDelay(due, 1_700_000_120, f.deps)).toEqual({ reschedule: 1_700_000_180 });
    expect(await runRecoveryDelay(due, 1_700_000_180, f.deps)).toBeUndefined();
    expect(f.events.filter((e) => e.body.event === 'RECOVERY').map((e) => e.eventId)).toEqual([
      `42:${b.uuid}:RECOVERY`,
    ]);
    expect(f.finished).toHaveLength(1);
    expect([...f.states.values()][0].recovery_pending).toBe(false);
    // A stale duplicate of the item finds nothing pending.
    expect(await runRecoveryDelay(due, 1_700_000_200, f.deps)).toBeUndefined();
    expect(f.events.filter((e) => e.body.event === 'RECOVERY')).toHaveLength(1);
  });
});
