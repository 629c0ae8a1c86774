import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AlarmLogEntry, queryAlarmLog } from '../../shared/domain/alarms/log.ts';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { type Outcome, outcomeOf } from '../../shared/domain/replay/outcomes.ts';
import type { ReplaySummary } from '../../shared/domain/replay/summary.ts';
import { loadSealKey } from '../../shared/domain/auth/seal.ts';
import { type LocalStack, startLocalStack } from '../../shared/local/stack.ts';
import type { Stats } from '../../shared/local/stats.ts';
import { drained, StackClient } from '../support/replay.ts';
import { seedTestDirectory } from '../support/seed.ts';

/**
 * What-if replays against alarms the real pipeline recorded, on a stack of this file's own (the
 * shared test stack's clock is moved by other suites, which would move the windows recorded here):
 * alarms are reported in bursts through the report route's code, and the service clock moves between
 * bursts instead of waiting (it runs the due work: delayed flushes, delay recoveries, reminders).
 *
 * - fidelity: over 10,000 alarms of five tasks (filter, every compression strategy, upgrade, delay
 *   recovery, workflows), the saved configuration replayed decides every alarm as recorded;
 * - a 5,000-alarm replay writes its result and nothing else, and puts nothing on a queue but itself;
 * - a 600-alarm storm replayed with a count of 50 instead of 10-minute windows: hand-computed counts;
 * - the same request twice gives the same answer;
 * - after saving a replayed configuration, the next 100 live alarms are decided as the replay said.
 */
let stack: LocalStack;
let client: StackClient;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    dataDir: ':memory:',
    stateFile: false,
    schedule: false,
    // One alarm batch at a time: the recording is about decisions, not contention (the storm and the
    // pipeline's isolation tests race consumers on a metric), and batches racing on the few metrics
    // here would only add their hand-back delays to every burst's wait.
    concurrency: { alarm: 1 },
    env: {
      LOG_LEVEL: 'ERROR',
      ALARM_RATE_LIMIT: '100000',
      TOCSIN_STATS: '1',
      WEBHOOK_BACKOFF_SECONDS: '1,1,1,1,1,1',
      NOTIFY_BACKOFF_SECONDS: '1,1,1,1,1,1',
      // The seal key from the suite's Secrets Manager, as on AWS (and as the shared test stack has it):
      // the replay queue's consumer reads it there.
      SEAL_KEY: '',
      SEAL_KEY_SECRET_ARN: process.env.SEAL_KEY_SECRET_ARN ?? '',
    },
  });
  // This process reports alarms through the report route's code: it reads the key too.
  await loadSealKey();
  await seedTestDirectory();
  client = new StackClient(stack.url);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

/** The receivers of every task here: e-mail to 1, the on-call group (e-mail 1, 2); urgent ones by SMS too. */
const receiver = {
  channels: { email: [1] },
  alarmgroup: [1],
  dispatch: [
    {
      conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '3' }] }],
      receiver: { alarmgroup: [2] },
    },
  ],
  mode: 2,
};

/** A whitelist: warnings and above kept; a page kept as urgent; the rest rejected and stored. */
const filter = {
  enable: true,
  mode: 1,
  not_match: 1,
  conditions: [
    { rule: [{ field: 'ctn.kind', operator: 'eq', threshold: 'page' }], level: 3 },
    { rule: [{ field: 'level', operator: 'gte', threshold: '1' }], level: 9 },
  ],
};

const upgrade = {
  enable: true,
  strategies: [
    { interval: 5, count: 4, level: 3, reuse_receiver: 1 },
    { interval: 15, count: 30, level: 3, reuse_receiver: 0, receiver: { alarmgroup: [2] } },
  ],
};

const byHost = [{ rule: [{ field: 'ctn.host', operator: 'eq-self' }] }];

/** The five tasks: every strategy, with the condition, content and full methods among them. */
const TASKS = [
  {
    name: 'cycle',
    alarms: 5_100,
    compress: { method: 1, conditions: byHost, strategy: 1 },
    template: { template_id: 1 },
  },
  { name: 'delay', alarms: 1_300, compress: { method: 3, strategy: 2 } },
  { name: 'cycle-count', alarms: 1_300, compress: { method: 4, strategy: 3, strategy_count: 5 } },
  {
    name: 'count-cycle',
    alarms: 1_300,
    compress: { method: 1, conditions: byHost, strategy: 4, strategy_count: 5 },
  },
  { name: 'count', alarms: 1_300, compress: { method: 3, strategy: 5, strategy_count: 3 } },
];
const ROUNDS = 30;
/** Seconds the clock moves after each round: windows end, quiet spells recover (delay 12 minutes). */
const GAPS = [120, 300, 45, 900, 240, 60, 780, 180];

const alarmOf = (i: number) => ({
  ctn: { host: `web-${i % 5}`, service: `svc-${i % 3}`, kind: i % 17 === 0 ? 'page' : 'normal' },
  level: i % 4,
});

/** What a run decided, without what it sent (the recorded run has no delay recoveries to send). */
const outcomeCounts = (s: ReplaySummary) => {
  const { delay_recoveries: _d, reminders: _r, messages: _m, webhook_events: _w, ...counts } = s;
  return counts;
};

async function stats(reset = false): Promise<Stats> {
  return (await (await fetch(`${stack.url}/_local/stats${reset ? '?reset=1' : ''}`)).json()) as Stats;
}

describe('replaying recorded alarms', () => {
  const tasks: { id: number; token: string; secret: string; reported: number }[] = [];
  let from = 0;
  let to = 0;

  it('fidelity: 10,000 alarms under one configuration each, replayed, are decided exactly as recorded', async () => {
    // Arrange: five tasks, then 30 rounds of bursts with the clock moved between them
    for (const t of TASKS) {
      const task = await client.createTask({
        name: `fidelity-${t.name}-${randomUUID().slice(0, 8)}`,
        receiver,
        filter,
        upgrade,
        compress: { enable: true, strategy_cycle: 10, not_match: 1, ...t.compress },
        recovery: { enable: true, mode: 2, delay_interval: 12 },
        workflow: { enable: true, reminds: [{ mode: 'once', status: 0, interval: 30, reuse_receiver: 1 }] },
        ...(t.template ? { template: t.template } : {}),
      });
      tasks.push({ ...task, reported: 0 });
    }
    from = (await client.now()) - 60;
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all(
        TASKS.map(async (t, n) => {
          const per = Math.ceil(t.alarms / ROUNDS);
          const alarms = Array.from({ length: per }, (_, i) => alarmOf(round * per + i));
          tasks[n].reported += (await client.report(tasks[n], alarms)).length;
        }),
      );
      await drained(stack);
      await client.advance(GAPS[round % GAPS.length]);
    }
    await drained(stack);
    to = (await client.now()) + 60;

    // Act: each task's whole history replayed under its saved configuration (on the replay queue)
    const answers = [];
    for (const task of tasks) answers.push(await client.replay({ task_id: task.id, from, to }));

    // Assert: every alarm replayed and decided as recorded (outcome, metric, batch, position, upgrades,
    // receivers, workflow), and the recordings used what they were meant to
    expect(tasks.reduce((n, t) => n + t.reported, 0)).toBeGreaterThanOrEqual(10_000);
    answers.forEach((a, n) => {
      expect(a.alarms).toMatchObject({
        in_window: tasks[n].reported,
        replayable: tasks[n].reported,
        skipped: 0,
      });
      expect(a.fidelity.mismatches).toEqual([]);
      expect(a.fidelity).toMatchObject({ share: 1, compared: tasks[n].reported, mismatches_total: 0 });
      expect(outcomeCounts(a.summary.current)).toEqual(outcomeCounts(a.summary.recorded));
      expect(a.summary.recorded.filtered, TASKS[n].name).toBeGreaterThan(0);
      expect(a.summary.recorded.compressed, TASKS[n].name).toBeGreaterThan(0);
      expect(a.summary.recorded.upgrades, TASKS[n].name).toBeGreaterThan(0);
      expect(a.summary.recorded.workflows_opened, TASKS[n].name).toBeGreaterThan(0);
      expect(a.summary.current.delay_recoveries, TASKS[n].name).toBeGreaterThan(0);
    });
    expect(answers[1].summary.recorded.deferred).toBeGreaterThan(0);
  }, 900_000);

  it('a 5,000-alarm replay writes only its result, and queues nothing but itself', async () => {
    // Arrange: the busiest task's last 5,000 alarms, with 30-minute windows instead of 10
    const task = tasks[0];
    await drained(stack, ['alarm', 'notify', 'webhook', 'replay']);
    await stats(true);
    // Act
    const answer = await client.replay({
      task_id: task.id,
      last: 5_000,
      config: { filter_fields: ['compress.strategy_cycle'], compress: { strategy_cycle: 30 } },
    });
    const cost = await stats();
    // Assert: it replayed them and found changes; the only table writes are its result item (running,
    // then done); the only message sent is its own (the route's role may send to the replay queue only)
    expect(answer.alarms.replayable).toBe(5_000);
    expect(answer.changes_total).toBeGreaterThan(0);
    expect(answer.samples.length).toBeGreaterThan(0);
    const writes = Object.entries(cost.dynamodb).filter(([, c]) => c.write > 0 || c.items > 0);
    expect(writes.map(([k, c]) => [k, c.calls])).toEqual([['PutItem REPLAY', 2]]);
    const sends = Object.entries(cost.sqs).filter(([k]) => k.startsWith('SendMessage'));
    expect(sends.map(([k, c]) => [k, c.calls, c.messages])).toEqual([['SendMessageBatchCommand', 1, 1]]);
  }, 300_000);

  it('a storm of 600 replayed with a count of 50 instead of 10-minute windows: the hand-computed messages', async () => {
    // Arrange: 600 alarms of one metric over 30 minutes (20 a minute), e-mail to 1 and 2, SMS to the
    // SMS group (4 and 6): 10-minute windows notify 3 of them
    const task = await client.createTask({
      name: `storm-${randomUUID().slice(0, 8)}`,
      receiver: { channels: { email: [1, 2] }, alarmgroup: [2] },
      compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 10, not_match: 1 },
    });
    for (let minute = 0; minute < 30; minute++) {
      await client.report(
        task,
        Array.from({ length: 20 }, (_, i) => ({ ctn: { host: 'db-1', seq: minute * 20 + i }, level: 2 })),
      );
      await drained(stack);
      await client.advance(60);
    }
    const request = {
      task_id: task.id,
      last: 600,
      // count-cycle: every 50th alarm of the metric is notified (a window closes at 50)
      config: {
        filter_fields: ['compress.strategy', 'compress.strategy_count'],
        compress: { strategy: 4, strategy_count: 50 },
      },
    };
    // Act
    const answer = await client.replay(request);
    const again = await client.replay(request);
    // Assert: recorded 3 notices (e-mail to 2, SMS to 2 each), edited 600 / 50 = 12
    expect(answer.fidelity).toMatchObject({ share: 1, compared: 600 });
    expect(answer.summary.recorded).toMatchObject({
      notified: 3,
      compressed: 597,
      messages: { email: 6, sms: 6 },
    });
    expect(answer.summary.edited).toMatchObject({
      notified: 12,
      compressed: 588,
      messages: { email: 24, sms: 24 },
    });
    expect(answer.people.map((p) => [p.uid, p.before, p.after]).sort()).toEqual([
      [1, { email: 3 }, { email: 12 }],
      [2, { email: 3 }, { email: 12 }],
      [4, { sms: 3 }, { sms: 12 }],
      [6, { sms: 3 }, { sms: 12 }],
    ]);
    expect(answer.changes_total).toBe(12 + 3);
    // The same request twice: the same answer (but for its id and time)
    const strip = ({ replay_id: _i, created_at: _c, ...rest }: typeof answer) => rest;
    expect(strip(again)).toEqual(strip(answer));
  }, 300_000);

  it('after saving a replayed configuration, the next 100 live alarms are decided as the replay said', async () => {
    // Arrange: a history under 10-minute windows per host, every alarm to the defaults
    const task = await client.createTask({
      name: `next-${randomUUID().slice(0, 8)}`,
      receiver: { channels: { email: [1] } },
      compress: {
        enable: true,
        method: 1,
        conditions: byHost,
        strategy: 1,
        strategy_cycle: 10,
        not_match: 1,
      },
    });
    await client.report(
      task,
      Array.from({ length: 200 }, (_, i) => alarmOf(i)),
    );
    await drained(stack);
    await client.advance(1_200);
    // The edit: urgent alarms to the SMS group only (lazy dispatch), level-0 alarms dropped, every
    // 7th alarm of a host notified (a window closes at 7; hour-long windows)
    const config = {
      filter_fields: [
        'receiver.dispatch',
        'filter',
        'compress.strategy',
        'compress.strategy_count',
        'compress.strategy_cycle',
      ],
      receiver: {
        dispatch: [
          {
            conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '3' }] }],
            receiver: { alarmgroup: [2] },
          },
        ],
      },
      filter: {
        enable: true,
        mode: 2,
        not_match: 0,
        conditions: [{ rule: [{ field: 'level', operator: 'eq', threshold: '0' }], level: 9 }],
      },
      compress: { strategy: 4, strategy_count: 7, strategy_cycle: 60 },
    };
    const now = await client.now();
    const next = Array.from({ length: 100 }, (_, i) => ({
      name: `n${i}`,
      at: now + 1 + i,
      ...alarmOf(1_000 + i),
    }));
    const replayed = await client.replay({ task_id: task.id, last: 200, config, scenario: next });
    // Act: save it, then report the 100 alarms one after the other
    const saved = await client.taskCall('PUT', '/alarmtask/updatefields', task, {
      ...config,
      replay_id: replayed.replay_id,
    });
    expect([saved.code, saved.msg]).toEqual([0, 'success']);
    const uuids: string[] = [];
    for (const a of next) {
      const [uuid] = await client.report(task, [{ ctn: a.ctn, level: a.level, uuid: randomUUID() }]);
      uuids.push(uuid);
      await drained(stack);
    }
    // Assert: each live decision is the replay's (a window's batch is the history id of its first
    // alarm: compared as which of the 100 opened it)
    const live: Outcome[] = [];
    const entries = await loggedEntries(task.id, now - 60, (await client.now()) + 60);
    for (const uuid of uuids) {
      const entry = entries.get(uuid) as AlarmLogEntry;
      live.push(outcomeOf(entry, await getAlarmRecord(task.id, uuid)));
    }
    // A window is named by its first alarm: which of the 100 opened it
    const openers = (list: Outcome[]) =>
      new Map(list.flatMap((o, i) => (o.k === 1 && o.batch !== undefined ? [[o.batch, i] as const] : [])));
    const predicted = replayed.scenario.map((x) => x.outcome);
    const [liveOpeners, predictedOpeners] = [openers(live), openers(predicted)];
    expect(predicted).toHaveLength(100);
    predicted.forEach((p, i) => {
      const o = live[i];
      expect({ ...o, batch: o.batch && liveOpeners.get(o.batch) }).toEqual({
        ...p,
        batch: p.batch && predictedOpeners.get(p.batch),
      });
    });
    // The edit shows: some dropped, some to the SMS group, windows of 7
    expect(live.filter((o) => o.result === 'filtered').length).toBeGreaterThan(0);
    expect(live.filter((o) => o.receivers.includes('d0')).length).toBeGreaterThan(0);
    expect(live.some((o) => o.k === 7 && o.result === 'notified')).toBe(true);
  }, 300_000);
});

/** The task's alarm log entries over a window, by uuid. */
async function loggedEntries(taskId: number, from: number, to: number): Promise<Map<string, AlarmLogEntry>> {
  const out = new Map<string, AlarmLogEntry>();
  let cursor: Parameters<typeof queryAlarmLog>[4];
  do {
    const page = await queryAlarmLog(taskId, { from, to }, {}, 500, cursor);
    for (const e of page.entries) out.set(e.uuid, e);
    cursor = page.next;
  } while (cursor);
  return out;
}
