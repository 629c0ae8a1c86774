import { logger } from '../../log.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import type { DueItem } from '../due/repository.ts';
import type { Task } from '../tasks/model.ts';
import { event, msgRef, taskRef } from '../events/payloads.ts';
import { strategyOf } from './compress.ts';
import { commitBackoffMs, MetricContended, VersionWatch } from './contention.ts';
import type { Why } from './explain.ts';
import { type AlarmRecord, advanceMetric, factsOf, type Plan } from './model.ts';
import { selectedReceivers, selectReceivers, sendNotice } from './notify.ts';
import { recoveryDelaySeconds } from './recovery.ts';
import { firstBucket, maxInterval, minuteOf, upgradeStrategies } from './upgrade.ts';
import { flushItem, RECOVERY_DELAY_KIND } from './delayed.ts';
import { replaying, runEffects } from './effects.ts';
import type { PipelineDeps } from './pipeline-deps.ts';
import { buildRecord, HELD_WORK_MARGIN_SECONDS, logged, loggedUnstored } from './records.ts';

/**
 * One unit of an alarm batch (pipeline.ts): an alarm that goes through no metric state, or the alarms
 * of one metric together. Each records its decision first and only then runs its side effects.
 */

export interface GroupItem {
  /** SQS message ids carrying this alarm. */
  ids: string[];
  alarm: AlarmMessage;
  /** The level after the filter. */
  level: Plan['level'];
  why: Why;
}

/**
 * DynamoDB's transactions take at most 4 MB: a group's records are committed in turns of at most
 * TRANSACTION_BYTES (each record counted at twice its message, its content being kept once and the
 * rest bounded by it, plus a margin), the metric's state and bucket beside them.
 */
export const TRANSACTION_BYTES = 3_500_000;

/** How many of `alarms`, from the first, fit one transaction (at least one). */
export function transactionShare(alarms: AlarmMessage[]): number {
  let bytes = 0;
  for (const [i, a] of alarms.entries()) {
    bytes += 2 * Buffer.byteLength(JSON.stringify(a)) + 2_048;
    if (bytes > TRANSACTION_BYTES) return Math.max(1, i);
  }
  return alarms.length;
}

/** An alarm that does not go through a metric's state. */
export async function processSingle(
  task: Task,
  alarm: AlarmMessage,
  plan: Exclude<Plan, { kind: 'compressed' }>,
  why: Why,
  deps: PipelineDeps,
) {
  if (plan.kind === 'drop') return deps.logAlarms([loggedUnstored(task, alarm, plan, why, deps.now())]);
  if (plan.kind === 'not_save_db' || (plan.kind === 'recovery' && !plan.store)) {
    const recovery = plan.kind === 'recovery';
    // A monitor's alert may be sent again (an Alertmanager group re-sent whole): with no record to
    // recognise it by, a marker does; a second time, its effects go out as replays (skipped by the
    // consumers when already delivered).
    const seenAt = alarm.dedup ? await deps.repo.markAlarmSeen(task.id, alarm.uuid, deps.now()) : undefined;
    const effects = seenAt === undefined ? deps : replaying(deps, seenAt);
    const msg = msgRef({
      uuid: alarm.uuid,
      level: plan.level,
      ctn: alarm.ctn,
      notice_time: alarm.notice_time,
    });
    const selection = selectReceivers(task.receiver, factsOf(alarm, plan.level), alarm.receiver);
    await sendNotice(
      {
        task,
        receivers: selectedReceivers(task.receiver, selection, alarm.receiver),
        scene: recovery ? 'recovery' : 'not_compress',
        jobId: `${alarm.task_id}:${alarm.uuid}:${recovery ? 'recovery' : 'not_compress'}`,
        history: msg,
        context: { type: 'not_save_db' },
        event: {
          body: event(recovery ? 'RECOVERY' : 'ALARM', 'not_save_db', { task: taskRef(task), msg }),
          eventId: `${alarm.task_id}:${alarm.uuid}:${recovery ? 'RECOVERY' : 'ALARM'}`,
        },
      },
      effects,
    );
    if (recovery && plan.metric) await deps.finishWorkflowsOfMetric({ task, metric: plan.metric });
    return deps.logAlarms([loggedUnstored(task, alarm, plan, why, deps.now())]);
  }
  const record = buildRecord(task, alarm, {
    outcome: plan.kind,
    level: plan.level,
    id: await deps.nextHistoryId(),
    now: deps.now(),
    recoveryMetric: plan.kind === 'recovery' ? plan.metric : undefined,
    why,
  });
  if ((await deps.recordAlarm(record)) === 'created') {
    await runEffects(task, record, deps);
    return deps.logAlarms([logged(task, record)]);
  }
  const stored = await deps.repo.getAlarmRecord(task.id, alarm.uuid);
  if (!stored) throw new Error(`alarm ${alarm.uuid}: record not found after a duplicate put`);
  await runEffects(task, stored, replaying(deps, stored.processed_at));
  await deps.logAlarms([logged(task, stored)]);
}

/**
 * The metric's serial lane as a group may use it (contention.ts): a group whose first commit lost
 * takes it and retries alone (a lane held by another consumer: the group yields, its alarms handed
 * back); a group whose alarms were handed back too often (`first`) takes it before anything else and
 * retries until `retryUntil` rather than its usual budget.
 */
/** How long a group whose metric's lane another consumer holds keeps retrying before it yields (ms). */
export const LANE_GRACE_MS = 1_000;

export interface LaneTicket {
  token: string;
  /** Until when the lane is taken (ms, real time): the end of the invocation. */
  untilMs: number;
  first: boolean;
  /** Until when (deps.clockMs) a `first` group retries its commit. */
  retryUntil: number;
}

/**
 * Alarms of one metric: read the metric's state, advance it through every alarm in order, and commit
 * state, minute bucket, alarm records and due work in one transaction conditioned on the state's
 * version. Contention (another consumer committed first) takes the metric's lane and re-reads and
 * retries with jittered backoff until `commitUntil` (deps.clockMs), then throws MetricContended (the
 * alarms are handed back), as it does after LANE_GRACE_MS when another consumer holds the lane; a commit refused
 * all along while the state did not move throws a plain error (a real failure). Alarms found already
 * recorded are taken out and only have their side effects re-run.
 */
export async function processGroup(
  task: Task,
  metric: string,
  items: GroupItem[],
  deps: PipelineDeps,
  commitUntil: number,
  lane?: LaneTicket,
) {
  const hold = { held: false };
  const take = async (): Promise<boolean | undefined> => {
    if (!lane) return undefined;
    try {
      hold.held = await deps.repo.takeMetricLane(task.id, metric, lane.token, deps.nowMs(), lane.untilMs);
      return hold.held;
    } catch (err) {
      // The lane cannot be read or written: retry as if there were none (within the budget).
      logger.warn('metric lane unavailable', { metric, error: err as Error });
      return undefined;
    }
  };
  if (lane?.first && (await take()) === false) throw new MetricContended(metric, 0);
  // Held by another consumer: retry a little while (it usually commits at once), then yield.
  let refusedSince: number | undefined;
  try {
    await commitGroup(task, metric, items, deps, lane?.first ? lane.retryUntil : commitUntil, async () => {
      if (hold.held || !lane || (await take()) !== false) return true;
      refusedSince ??= deps.clockMs();
      return deps.clockMs() - refusedSince < LANE_GRACE_MS;
    });
  } finally {
    if (lane && hold.held)
      await deps.repo.releaseMetricLane(task.id, metric, lane.token).catch(() => undefined);
  }
}

/**
 * The commits of a group (processGroup). `lost` is told of a commit another consumer won, once per
 * lost commit: false when the group must yield (another consumer holds the metric's lane).
 */
async function commitGroup(
  task: Task,
  metric: string,
  items: GroupItem[],
  deps: PipelineDeps,
  commitUntil: number,
  lost: () => Promise<boolean>,
) {
  const strategy = strategyOf(task.compress);
  const upgrades = upgradeStrategies(task.upgrade);
  const longest = maxInterval(upgrades);
  const delay = recoveryDelaySeconds(task);
  const levels = new Map<string, Plan['level']>();
  const whys = new Map<string, Why>();
  const historyIds = new Map<string, number>();
  for (const { alarm, level, why } of items) {
    levels.set(alarm.uuid, level);
    whys.set(alarm.uuid, why);
    historyIds.set(alarm.uuid, await deps.nextHistoryId());
  }
  let pending = items.map((i) => i.alarm);
  const replays: string[] = [];
  const committed: AlarmRecord[] = [];
  let versions = new VersionWatch();
  for (let attempt = 0; pending.length > 0; attempt++) {
    // The alarms that fit one transaction (below DynamoDB's 4 MB): a larger group commits in turns.
    const chunk = pending.slice(0, transactionShare(pending));
    const now = deps.now();
    const state = await deps.repo.getMetricState(task.id, metric);
    versions.see(state?.version);
    const buckets =
      upgrades.length > 0
        ? await deps.repo.queryMetricMinutes(task.id, metric, firstBucket(now, longest), minuteOf(now))
        : new Map<number, number>();
    const result = advanceMetric({
      state,
      taskId: task.id,
      metric,
      alarms: chunk.map((a) => ({ uuid: a.uuid, historyId: historyIds.get(a.uuid) as number })),
      now,
      strategy,
      upgrades,
      buckets,
      recoveryDelay: delay,
    });
    const records = chunk.map((alarm, i) => {
      const step = result.steps[i];
      return buildRecord(task, alarm, {
        outcome: 'compressed',
        level: levels.get(alarm.uuid) as Plan['level'],
        id: historyIds.get(alarm.uuid) as number,
        now,
        metric,
        batch: step.batch,
        notify: step.notify,
        k: step.k,
        seq: step.seq,
        upgrades: step.upgrades,
        why: whys.get(alarm.uuid) as Why,
        window: { start: step.windowStart, end: step.windowEnd },
        upgradeCounts: step.counts,
        keepAtLeast: Math.max(step.windowEnd - now, delay ?? 0) + HELD_WORK_MARGIN_SECONDS,
      });
    });
    const dues: DueItem[] = result.flushes.map((f) => flushItem(task.id, metric, f.batch, f.uuid, f.dueAt));
    if (result.recoveryDueAt !== undefined) {
      dues.push({
        kind: RECOVERY_DELAY_KIND,
        ref: `${task.id}:${metric}`,
        due_at: result.recoveryDueAt,
        payload: { task_id: task.id, metric },
      });
    }
    const keep = Math.max(strategy.cycleSeconds, longest * 60, delay ?? 0);
    const res = await deps.repo.commitMetricGroup({
      state: result.state,
      expectedVersion: state?.version,
      stateTtl: now + keep + 86_400,
      bucket:
        result.bucketAdd > 0
          ? {
              minute: minuteOf(now),
              add: result.bucketAdd,
              ttl: (minuteOf(now) + 1) * 60 + longest * 60 + 3600,
            }
          : undefined,
      records,
      dues,
    });
    if (res.ok) {
      committed.push(...records);
      pending = pending.slice(chunk.length);
      // The next turn starts afresh: its own attempts, and our commit is no one else's move.
      versions = new VersionWatch();
      attempt = -1;
      continue;
    }
    if (res.duplicates.length > 0) {
      replays.push(...res.duplicates);
      pending = pending.filter((a) => !res.duplicates.includes(a.uuid));
    }
    if (!res.conflict) continue;
    // One consumer at a time retries against a contended metric: the one that holds its lane.
    if (!(await lost())) throw new MetricContended(metric, attempt + 1);
    if (deps.clockMs() >= commitUntil) {
      // Contention only if someone else moved the state meanwhile (one more read tells, if need be).
      if (!versions.moved) versions.see((await deps.repo.getMetricState(task.id, metric))?.version);
      if (versions.moved) throw new MetricContended(metric, attempt + 1);
      throw new Error(
        `metric ${metric}: no commit after ${attempt + 1} attempts, and its state did not move`,
      );
    }
    await deps.sleep(commitBackoffMs(attempt));
  }
  const recorded = [...committed];
  for (const r of committed) await runEffects(task, r, deps);
  for (const uuid of replays) {
    const r = await deps.repo.getAlarmRecord(task.id, uuid);
    if (r) {
      await runEffects(task, r, replaying(deps, r.processed_at));
      recorded.push(r);
    }
  }
  await deps.logAlarms(recorded.map((r) => logged(task, r)));
}
