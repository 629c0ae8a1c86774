import { describe, expect, it } from 'vitest';
import type { AlarmMessage, NotificationJob } from '../../contracts/messages.ts';
import type { Task } from '../tasks/model.ts';
import { testTask } from '../tasks/test-task.ts';
import {
  commitBackoffMs,
  commitDeadline,
  EFFECTS_RESERVE_MS,
  handbackDelaySeconds,
  MAX_HAND_BACKS,
} from './contention.ts';
import type { AlarmRecord, MetricState } from './model.ts';
import { LANE_GRACE_MS } from './process.ts';
import { parseAlarmMessage, processAlarmBatch } from './pipeline.ts';
import type { PipelineDeps } from './pipeline-deps.ts';
import type { CommitResult, MetricCommit } from './repository.ts';
import { logged } from '../../testing/logs.ts';

/**
 * Contention on one metric: a group's commit lost to other consumers is retried within its budget,
 * then its alarms are handed back to the queue (never reported failed for it); real failures are
 * still reported failed (their receives count, and the dead-letter queue takes them in the end).
 */

const compressing = testTask({
  compress: { enable: true, method: 4, strategy: 3, strategy_count: 5, strategy_cycle: 10, not_match: 1 },
});
const plain = testTask({ id: 43 });

interface WorldOptions {
  /** Commits another consumer makes first (each moves the state and refuses ours). */
  rivals?: number;
  /** Commits refused while the state stays where it is (a fault, not contention). */
  stuck?: number;
  /** What every commit throws (the table is down). */
  commitError?: Error;
  handBackError?: Error;
  effectsError?: Error;
  contentionMs?: number;
}

/** In-memory deps with the repository's conditional semantics and a clock that only sleeps move. */
function world(o: WorldOptions = {}) {
  const states = new Map<string, MetricState>();
  const records = new Map<string, AlarmRecord>();
  const handedBack: AlarmMessage[] = [];
  const logged: string[] = [];
  const jobs: NotificationJob[] = [];
  let rivals = o.rivals ?? 0;
  let stuck = o.stuck ?? 0;
  let elapsedMs = 0;
  let attempts = 0;
  let nextId = 1000;
  /** The metric's serial lane (one metric in these tests): its holder, until when, times taken. */
  const lane = { token: '', untilMs: 0, taken: 0 };
  const tasks = new Map<number, Task>([
    [compressing.id, compressing],
    [plain.id, plain],
  ]);
  const deps: PipelineDeps = {
    now: () => 1_700_000_000,
    nowMs: () => 1_700_000_000_000,
    count: () => undefined,
    measure: () => undefined,
    getTask: async (id) => tasks.get(id),
    nextHistoryId: async () => ++nextId,
    recordAlarm: async () => 'created',
    getAlarmGroups: async () => [],
    publishJobs: async () => undefined,
    publishEvents: async () => undefined,
    sendEffects: async ({ notify }) => {
      if (o.effectsError) throw o.effectsError;
      jobs.push(...notify);
    },
    createWorkflow: async () => ({ id: 1, created: true }),
    finishWorkflowsOfMetric: async () => [],
    logAlarms: async (entries) => {
      logged.push(...entries.map((e) => e.uuid));
    },
    sleep: async (ms) => {
      elapsedMs += ms;
    },
    clockMs: () => elapsedMs,
    contentionMs: () => o.contentionMs ?? 20_000,
    handBack: async (alarms) => {
      if (o.handBackError) throw o.handBackError;
      handedBack.push(...alarms);
    },
    repo: {
      getAlarmRecord: async (taskId: number, uuid: string) => records.get(`${taskId}#${uuid}`),
      putAlarmRecords: async (rs: AlarmRecord[]) =>
        rs.map((r) => {
          if (records.has(`${r.task_id}#${r.uuid}`)) return 'exists' as const;
          records.set(`${r.task_id}#${r.uuid}`, r);
          return 'created' as const;
        }),
      getMetricState: async (taskId: number, metric: string) =>
        structuredClone(states.get(`${taskId}#${metric}`)),
      queryMetricMinutes: async () => new Map<number, number>(),
      commitMetricGroup: async (c: MetricCommit): Promise<CommitResult> => {
        attempts++;
        if (o.commitError) throw o.commitError;
        const key = `${c.state.task_id}#${c.state.metric}`;
        const current = states.get(key);
        if (rivals > 0) {
          rivals--;
          // Another consumer's commit: here it only moves the version (no window of its own).
          const base = {
            task_id: c.state.task_id,
            metric: c.state.metric,
            recovery_pending: false,
            upgrade_fired: {},
          };
          states.set(key, { ...(current ?? base), version: (current?.version ?? 0) + 1 });
          return { ok: false, duplicates: [], conflict: true };
        }
        if (stuck > 0) {
          stuck--;
          return { ok: false, duplicates: [], conflict: true };
        }
        if (current?.version !== c.expectedVersion) return { ok: false, duplicates: [], conflict: true };
        states.set(key, structuredClone(c.state));
        for (const r of c.records) records.set(`${r.task_id}#${r.uuid}`, r);
        return { ok: true };
      },
      takeMetricLane: async (_t: number, _m: string, token: string, nowMs: number, untilMs: number) => {
        if (lane.untilMs >= nowMs && lane.token !== token) return false;
        Object.assign(lane, { token, untilMs, taken: lane.taken + 1 });
        return true;
      },
      releaseMetricLane: async (_t: number, _m: string, token: string) => {
        if (lane.token === token) lane.untilMs = 0;
      },
    } as unknown as PipelineDeps['repo'],
  };
  return {
    deps,
    lane,
    records,
    handedBack,
    logged,
    attempts: () => attempts,
    elapsedMs: () => elapsedMs,
  };
}

let seq = 0;
function alarm(taskId = compressing.id, over: Partial<AlarmMessage> = {}): AlarmMessage {
  seq++;
  return {
    kind: 'alarm',
    uuid: `c-${seq}`,
    task_id: taskId,
    level: 1,
    ctn: { n: seq },
    notice_time: 1_700_000_000,
    reported_at: 1_700_000_000,
    ...over,
  };
}
const msg = (a: AlarmMessage) => ({ id: `m-${a.uuid}`, body: JSON.stringify(a) });

describe('contention on one metric', () => {
  it('retries a lost commit with backoff as long as its budget lasts (well past a dozen attempts)', async () => {
    // Arrange
    const w = world({ rivals: 40 });
    const [a, b] = [alarm(), alarm()];
    // Act
    const failed = await processAlarmBatch([msg(a), msg(b)], w.deps);
    // Assert
    expect(failed).toEqual([]);
    expect(w.attempts()).toBe(41);
    expect([a, b].map((x) => w.records.get(`42#${x.uuid}`)?.k)).toEqual([1, 2]);
    expect(w.handedBack).toEqual([]);
    expect(w.logged).toEqual([a.uuid, b.uuid]);
  });

  it('hands the alarms back to the queue when contention outlasts the budget: acknowledged, not failed', async () => {
    // Arrange
    const w = world({ rivals: Number.POSITIVE_INFINITY, contentionMs: 1_000 });
    const [a, b] = [alarm(), alarm()];
    // Act
    const [failed, warnings] = await logged('warn', () =>
      processAlarmBatch([msg(a), msg(b), { ...msg(a), id: 'copy-a' }], w.deps),
    );
    // Assert: nothing for the dead-letter queue; each alarm queued again once, its handbacks counted
    expect(failed).toEqual([]);
    expect(warnings).toEqual([
      ['metric contended: alarms handed back to the queue', { uuids: [a.uuid, b.uuid], handedBack: 1 }],
    ]);
    expect(w.handedBack).toEqual([
      { ...a, handed_back: 1 },
      { ...b, handed_back: 1 },
    ]);
    expect(w.records.size).toBe(0);
    expect(w.logged).toEqual([]);
    expect(w.elapsedMs()).toBeGreaterThanOrEqual(1_000);
    expect(w.elapsedMs()).toBeLessThan(1_000 + 600);
  });

  it('a handed-back alarm is processed like any other, and counts its handbacks when handed back again', async () => {
    // Arrange
    const again = alarm(compressing.id, { handed_back: 2 });
    const contended = world({ rivals: Number.POSITIVE_INFINITY, contentionMs: 500 });
    const calm = world();
    // Act
    const [failedContended, warnings] = await logged('warn', () =>
      processAlarmBatch([msg(again)], contended.deps),
    );
    expect(warnings).toEqual([
      ['metric contended: alarms handed back to the queue', { uuids: [again.uuid], handedBack: 3 }],
    ]);
    const failedCalm = await processAlarmBatch([msg(again)], calm.deps);
    // Assert
    expect(failedContended).toEqual([]);
    expect(contended.handedBack).toEqual([{ ...again, handed_back: 3 }]);
    expect(failedCalm).toEqual([]);
    expect(calm.records.get(`42#${again.uuid}`)).toMatchObject({ outcome: 'compressed', k: 1 });
  });

  it('hands back only the contended group: the rest of the batch is processed and acknowledged', async () => {
    // Arrange
    const w = world({ rivals: Number.POSITIVE_INFINITY, contentionMs: 500 });
    const [hot, other] = [alarm(compressing.id), alarm(plain.id)];
    // Act
    const [failed, warnings] = await logged('warn', () => processAlarmBatch([msg(hot), msg(other)], w.deps));
    // Assert
    expect(failed).toEqual([]);
    expect(w.handedBack.map((x) => x.uuid)).toEqual([hot.uuid]);
    expect(warnings).toEqual([
      ['metric contended: alarms handed back to the queue', { uuids: [hot.uuid], handedBack: 1 }],
    ]);
    expect(w.records.get(`43#${other.uuid}`)).toMatchObject({ outcome: 'compress_disable' });
    expect(w.logged).toEqual([other.uuid]);
  });

  it('reports the messages failed when the handback cannot be queued (a receive counts; nothing is lost)', async () => {
    // Arrange
    const w = world({
      rivals: Number.POSITIVE_INFINITY,
      contentionMs: 500,
      handBackError: new Error('alarm queue down'),
    });
    const [a, b] = [alarm(), alarm()];
    // Act
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(a), msg(b)], w.deps));
    // Assert
    expect(failed.sort()).toEqual([`m-${a.uuid}`, `m-${b.uuid}`].sort());
    expect(w.records.size).toBe(0);
    expect(errors.map(([m]) => m)).toEqual([
      'could not hand contended alarms back to the queue; they will be retried',
    ]);
  });

  it('hands nothing back when the batch fails on its effects: every message is retried as before', async () => {
    // Arrange
    const w = world({
      rivals: Number.POSITIVE_INFINITY,
      contentionMs: 500,
      effectsError: new Error('notify queue down'),
    });
    const [hot, other] = [alarm(compressing.id), alarm(plain.id)];
    // Act
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(hot), msg(other)], w.deps));
    // Assert
    expect(failed.sort()).toEqual([`m-${hot.uuid}`, `m-${other.uuid}`].sort());
    expect(w.handedBack).toEqual([]);
    expect(errors.map(([m]) => m)).toEqual([
      'could not send or queue the side effects of a batch; it will be retried',
    ]);
  });

  it('a real failure still counts toward the dead-letter queue: a commit that throws is reported failed', async () => {
    // Arrange
    const w = world({ commitError: new Error('ResourceNotFoundException: table down') });
    const [a, b] = [alarm(), alarm()];
    // Act
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(a), msg(b)], w.deps));
    // Assert
    expect(failed.sort()).toEqual([`m-${a.uuid}`, `m-${b.uuid}`].sort());
    expect(errors.map(([m, x]) => [m, (x.error as Error).message])).toEqual([
      ['alarm processing failed; will be retried', 'ResourceNotFoundException: table down'],
    ]);
    expect(w.attempts()).toBe(1);
    expect(w.handedBack).toEqual([]);
  });

  it('a commit refused while the state never moves is a fault, not contention: reported failed', async () => {
    // Arrange
    const w = world({ stuck: Number.POSITIVE_INFINITY, contentionMs: 1_000 });
    const a = alarm();
    // Act
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(a)], w.deps));
    // Assert
    expect(failed).toEqual([`m-${a.uuid}`]);
    expect(w.handedBack).toEqual([]);
    expect(w.elapsedMs()).toBeGreaterThanOrEqual(1_000);
    expect(errors.map(([m]) => m)).toEqual(['alarm processing failed; will be retried']);
  });

  it('a single refused attempt at the deadline is told apart by one more read of the state', async () => {
    // Arrange: no time to retry at all (the invocation is almost over)
    const contended = world({ rivals: 1 });
    const faulty = world({ stuck: 1 });
    const [a, b] = [alarm(), alarm()];
    // Act
    const [failedContended, warnings] = await logged('warn', () =>
      processAlarmBatch([msg(a)], contended.deps, { remainingMs: 5_000 }),
    );
    expect(warnings).toEqual([
      ['metric contended: alarms handed back to the queue', { uuids: [a.uuid], handedBack: 1 }],
    ]);
    const [failedFaulty, errors] = await logged('error', () =>
      processAlarmBatch([msg(b)], faulty.deps, { remainingMs: 5_000 }),
    );
    expect(errors.map(([m]) => m)).toEqual(['alarm processing failed; will be retried']);
    // Assert
    expect(failedContended).toEqual([]);
    expect(contended.handedBack.map((x) => x.uuid)).toEqual([a.uuid]);
    expect(failedFaulty).toEqual([`m-${b.uuid}`]);
    expect(faulty.handedBack).toEqual([]);
  });

  it("never retries into the invocation's last seconds, kept for the effects and the handback", async () => {
    // Arrange
    const w = world({ rivals: Number.POSITIVE_INFINITY });
    // Act
    const [failed, warnings] = await logged('warn', () =>
      processAlarmBatch([msg(alarm())], w.deps, { remainingMs: EFFECTS_RESERVE_MS + 300 }),
    );
    // Assert
    expect(failed).toEqual([]);
    expect(warnings.map(([m]) => m)).toEqual(['metric contended: alarms handed back to the queue']);
    expect(w.handedBack).toHaveLength(1);
    expect(w.elapsedMs()).toBeGreaterThanOrEqual(300);
    expect(w.elapsedMs()).toBeLessThan(300 + 600);
  });
});

describe('contention policy', () => {
  it('after three hand-backs an alarm takes its metric serial lane and retries past the budget until it commits', async () => {
    // Arrange: a budget of 1 s, and other consumers winning the next 20 commits (seconds of backoff)
    const w = world({ rivals: 20, contentionMs: 1_000 });
    const a = alarm(compressing.id, { handed_back: MAX_HAND_BACKS });
    // Act
    const failed = await processAlarmBatch([msg(a)], w.deps, { remainingMs: 25_000 });
    // Assert: committed, not handed back again; the lane taken and given back
    expect(failed).toEqual([]);
    expect(w.handedBack).toEqual([]);
    expect(w.records.has(`${compressing.id}#${a.uuid}`)).toBe(true);
    expect(w.elapsedMs()).toBeGreaterThan(1_000);
    expect(w.lane).toMatchObject({ taken: 1, untilMs: 0 });
  });

  it('a group that keeps losing while the lane is held yields after a second; a lane group finding it held is handed back', async () => {
    // Arrange: another consumer holds the lane and keeps winning the commits
    const w = world({ rivals: 1_000 });
    Object.assign(w.lane, { token: 'other', untilMs: Date.now() + 60_000 });
    const plainAlarm = alarm();
    const laneAlarm = alarm(compressing.id, { handed_back: MAX_HAND_BACKS });
    // Act
    await logged('warn', () => processAlarmBatch([msg(plainAlarm)], w.deps));
    const attemptsAfterFirst = w.attempts();
    const elapsedAfterFirst = w.elapsedMs();
    await logged('warn', () => processAlarmBatch([msg(laneAlarm)], w.deps));
    // Assert: retried for the grace only (well within its 20 s budget), then handed back; the lane
    // group never tries
    expect(attemptsAfterFirst).toBeGreaterThan(1);
    expect(elapsedAfterFirst).toBeGreaterThanOrEqual(LANE_GRACE_MS);
    expect(elapsedAfterFirst).toBeLessThan(LANE_GRACE_MS + 1_000);
    expect(w.attempts()).toBe(attemptsAfterFirst);
    expect(w.handedBack.map((h) => [h.uuid, h.handed_back])).toEqual([
      [plainAlarm.uuid, 1],
      [laneAlarm.uuid, MAX_HAND_BACKS + 1],
    ]);
  });

  it('commitDeadline: the budget, cut to the invocation minus its reserve, never negative', () => {
    expect(commitDeadline(100, 20_000)).toBe(20_100);
    expect(commitDeadline(100, 20_000, 30_000)).toBe(100 + 30_000 - EFFECTS_RESERVE_MS);
    expect(commitDeadline(100, 5_000, 30_000)).toBe(5_100);
    expect(commitDeadline(100, 20_000, 3_000)).toBe(100);
  });

  it('commitBackoffMs: exponential from 10 ms, capped at 400 ms, jittered by half either way', () => {
    expect(commitBackoffMs(0, () => 0)).toBe(5);
    expect(commitBackoffMs(0, () => 1)).toBe(15);
    expect(commitBackoffMs(3, () => 0.5)).toBe(80);
    expect(commitBackoffMs(60, () => 0.5)).toBe(400);
    expect(commitBackoffMs(60, () => 0.999)).toBeLessThan(600);
  });

  it('handbackDelaySeconds: 1 to 5 s', () => {
    expect(handbackDelaySeconds(() => 0)).toBe(1);
    expect(handbackDelaySeconds(() => 0.999)).toBe(5);
  });

  it('parseAlarmMessage takes a positive handback count and refuses any other', () => {
    const a = alarm();
    expect(parseAlarmMessage(JSON.stringify({ ...a, handed_back: 3 }))).toEqual({ ...a, handed_back: 3 });
    for (const bad of [0, -1, 1.5, '1', null])
      expect(parseAlarmMessage(JSON.stringify({ ...a, handed_back: bad }))).toBeUndefined();
  });
});
