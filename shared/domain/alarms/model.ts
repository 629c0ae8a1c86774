import type { AlarmMessage } from '../../contracts/messages.ts';
import type { AlarmFacts } from '../conditions/evaluate.ts';
import type { Task, UpgradeStrategy } from '../tasks/model.ts';
import type { Level } from '../../contracts/levels.ts';
import type { ReceiverConfig } from '../../contracts/receivers.ts';
import {
  type CompressNotify,
  compressStep,
  computeMetric,
  type StrategyConfig,
  type WindowState,
} from './compress.ts';
import { applyFilter } from './filter.ts';
import type { HistoryRecord } from './history.ts';
import type { ReceiverSelection } from './notify.ts';
import { isRecoveryAlarm } from './recovery.ts';
import { type UpgradeFire, upgradeStep } from './upgrade.ts';
import type { Why } from './explain.ts';

/**
 * The alarm pipeline's types and pure transitions (API guide §9): the stateless plan of one alarm
 * (recovery -> filter -> compress), and the per-metric state machine (compression window, upgrade
 * counting, delay recovery) that a group of alarms of one metric advances in one transaction.
 */

/** What happens to an alarm, decided from the task configuration and the alarm alone. */
export type Plan =
  /** Rejected by the filter and not stored. */
  | { kind: 'drop'; level: Level }
  /** Condition-mode recovery; stored when the task stores alarms; `metric` when compression is on. */
  | { kind: 'recovery'; level: Level; store: boolean; metric?: string }
  /** Rejected by the filter, stored without notification. */
  | { kind: 'rejected'; level: Level }
  /** The task does not store alarms: notified with `msg`, nothing stored. */
  | { kind: 'not_save_db'; level: Level }
  | { kind: 'compress_disable'; level: Level }
  | { kind: 'compress_not_match'; level: Level }
  /** Compression matched nothing and `not_match` is 0: stored only. */
  | { kind: 'not_match_stored'; level: Level }
  /** Compressed under `metric`: goes through the metric's state (window, upgrade, delay recovery). */
  | { kind: 'compressed'; level: Level; metric: string };

export type PlanKind = Plan['kind'];
/** Outcomes that store a record. */
export type StoredOutcome = Exclude<PlanKind, 'drop' | 'not_save_db'>;

export function factsOf(alarm: Pick<AlarmMessage, 'ctn' | 'notice_time'>, level: number): AlarmFacts {
  return { ctn: alarm.ctn, level, notice_time: alarm.notice_time };
}

/** Recovery -> filter -> compress, as far as they depend on the alarm alone. */
export function planAlarm(task: Task, alarm: AlarmMessage): Plan {
  const original = factsOf(alarm, alarm.level);
  if (!alarm.recovery && isRecoveryAlarm(task, original)) {
    const metric = task.compress?.enable ? computeMetric(task.id, task.compress, original) : undefined;
    return { kind: 'recovery', level: alarm.level, store: task.flag_save_db === 1, metric };
  }
  const filtered = applyFilter(task.filter, { ...original, level: alarm.level });
  const level = filtered.level;
  if (!filtered.keep) {
    return task.filter.not_match === 1 && task.flag_save_db === 1
      ? { kind: 'rejected', level }
      : { kind: 'drop', level };
  }
  if (alarm.recovery) {
    // A monitor's recovery (a resolved alert) has its firing alert's content: the filter treats it as
    // it treated that alert (a rejected alert's resolution notifies nobody), and it reaches the
    // metric that alert was compressed under (computed at the same filtered level).
    const metric = task.compress?.enable
      ? computeMetric(task.id, task.compress, factsOf(alarm, level))
      : undefined;
    return { kind: 'recovery', level, store: task.flag_save_db === 1, metric };
  }
  if (task.flag_save_db !== 1) return { kind: 'not_save_db', level };
  if (!task.compress?.enable) return { kind: 'compress_disable', level };
  const metric = computeMetric(task.id, task.compress, factsOf(alarm, level));
  if (metric === undefined) {
    return task.compress.not_match === 1
      ? { kind: 'compress_not_match', level }
      : { kind: 'not_match_stored', level };
  }
  return { kind: 'compressed', level, metric };
}

/**
 * The per-alarm record `ALARM#<uuid>`: the stored alarm (history) and every decision the pipeline
 * took for it, written once (conditionally). A redelivered alarm finds it and only re-runs the side
 * effects, which carry ids derived from the uuid.
 */
export interface AlarmRecord {
  uuid: string;
  task_id: number;
  outcome: StoredOutcome;
  history: HistoryRecord;
  /** The level the alarm was reported with (the history carries the level after the filter). */
  reported_level: Level;
  reported_at: number;
  processed_at: number;
  /** The report's receiver override. */
  receiver?: ReceiverConfig;
  selection: ReceiverSelection;
  /** Whether the alarm is notified inline, once its delay window ends, or not at all. */
  notify: CompressNotify;
  /** Compressed alarms: position in the window. */
  k?: number;
  /**
   * Compressed alarms: the alarm's place among every alarm of its metric (1, 2, ...: the order the
   * metric's state took them in), the base of its events' sequence numbers (API guide §12.6).
   */
  seq?: number;
  /** Compressed alarms: upgrade strategies this alarm fired. */
  upgrades: UpgradeFire[];
  /** Create a workflow when notified (workflow.enable at decision time, compressed alarms). */
  workflow: boolean;
  /** Recoveries: the metric whose open workflows the recovery finishes. */
  recovery_metric?: string;
  /** Why: the conditions that matched and the values they saw (the decision trace). */
  why?: Why;
  /** Compressed alarms: the window the alarm fell in (Unix seconds). */
  window?: { start: number; end: number };
  /** Compressed alarms of a task with upgrade: the trailing count of each strategy, in order. */
  upgrade_counts?: number[];
  /** When the record expires (the task's alarm retention; stored as the item's `ttl`). */
  expires_at?: number;
}

/** Inline notification of the non-compressed outcomes. */
export function notifyOf(outcome: StoredOutcome): CompressNotify {
  return outcome === 'recovery' || outcome === 'compress_disable' || outcome === 'compress_not_match'
    ? 'now'
    : 'none';
}

/** State of one metric of a task (`METRIC#<task>#<metric>` / `STATE`). */
export interface MetricState {
  task_id: number;
  metric: string;
  /** Optimistic-concurrency version; every group commit and due run bumps it. */
  version: number;
  /** Alarms the metric took so far (absent on a state written before it was counted). */
  seq?: number;
  window?: WindowState;
  /** Last alarm of the metric (delay recovery). */
  last_at?: number;
  last_uuid?: string;
  /** A delay-recovery check is scheduled (at most one per metric). */
  recovery_pending: boolean;
  /** Upgrade strategy key -> when it last fired. */
  upgrade_fired: Record<string, number>;
}

export interface GroupAlarm {
  uuid: string;
  /** The alarm's history id; the batch id of a window it opens. */
  historyId: number;
}

export interface GroupInput {
  state: MetricState | undefined;
  taskId: number;
  metric: string;
  alarms: GroupAlarm[];
  now: number;
  strategy: StrategyConfig;
  upgrades: UpgradeStrategy[];
  /** Minute buckets of the metric (minute -> count) read before this group; counts the group adds. */
  buckets: Map<number, number>;
  /** Delay recovery: seconds of silence before the last alarm recovers; undefined when off. */
  recoveryDelay?: number;
}

export interface GroupStep {
  uuid: string;
  /** The alarm's place among every alarm of the metric (MetricState.seq after it). */
  seq: number;
  k: number;
  batch: number;
  notify: CompressNotify;
  opened: boolean;
  windowEnd: number;
  windowStart: number;
  /** The trailing count of each upgrade strategy after this alarm (empty without upgrade). */
  counts: number[];
  upgrades: UpgradeFire[];
}

export interface GroupResult {
  state: MetricState;
  steps: GroupStep[];
  /** Alarms to add to the current minute's bucket (0 when upgrade is off). */
  bucketAdd: number;
  /** Delay strategy: windows opened by this group, flushed at their end. */
  flushes: { uuid: string; batch: number; dueAt: number }[];
  /** When set, schedule the metric's delay-recovery check at this time. */
  recoveryDueAt?: number;
}

/** A group of alarms of one metric, in order, through the compression, upgrade and delay recovery. */
export function advanceMetric(input: GroupInput): GroupResult {
  const { now } = input;
  const state: MetricState = input.state
    ? { ...input.state, upgrade_fired: { ...input.state.upgrade_fired }, version: input.state.version + 1 }
    : { task_id: input.taskId, metric: input.metric, version: 1, recovery_pending: false, upgrade_fired: {} };
  const buckets = new Map(input.buckets);
  const minute = Math.floor(now / 60);
  const steps: GroupStep[] = [];
  const flushes: GroupResult['flushes'] = [];
  let recoveryDueAt: number | undefined;
  for (const a of input.alarms) {
    const c = compressStep(state.window, { uuid: a.uuid, now, newBatch: a.historyId }, input.strategy);
    state.window = c.window;
    if (c.notify === 'deferred') flushes.push({ uuid: a.uuid, batch: c.batch, dueAt: c.window.end });
    let fires: UpgradeFire[] = [];
    let counts: number[] = [];
    if (input.upgrades.length > 0) {
      buckets.set(minute, (buckets.get(minute) ?? 0) + 1);
      const u = upgradeStep(input.upgrades, buckets, state.upgrade_fired, now);
      state.upgrade_fired = u.fired;
      fires = u.fires;
      counts = u.counts;
    }
    state.last_at = now;
    state.last_uuid = a.uuid;
    state.seq = (state.seq ?? 0) + 1;
    if (input.recoveryDelay !== undefined && !state.recovery_pending) {
      state.recovery_pending = true;
      recoveryDueAt = now + input.recoveryDelay;
    }
    steps.push({
      uuid: a.uuid,
      seq: state.seq,
      k: c.k,
      batch: c.batch,
      notify: c.notify,
      opened: c.opened,
      windowEnd: c.window.end,
      windowStart: c.window.start,
      counts,
      upgrades: fires,
    });
  }
  return {
    state,
    steps,
    bucketAdd: input.upgrades.length > 0 ? input.alarms.length : 0,
    flushes,
    recoveryDueAt,
  };
}
