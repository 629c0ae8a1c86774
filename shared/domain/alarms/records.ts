import type { AlarmMessage } from '../../contracts/messages.ts';
import type { Task } from '../tasks/model.ts';
import { sealReceiverRobots } from '../channels/robots.ts';
import { retentionDaysOf } from '../tasks/settings.ts';
import type { Why } from './explain.ts';
import type { HistoryRecord } from './history.ts';
import { type AlarmLogEntry, entryOfRecord } from './log.ts';
import { type AlarmRecord, factsOf, notifyOf, type Plan, type StoredOutcome } from './model.ts';
import { selectReceivers } from './notify.ts';

/** The stored record and the alarm log entry of a processed alarm. */

export function buildRecord(
  task: Task,
  alarm: AlarmMessage,
  d: {
    outcome: StoredOutcome;
    level: AlarmRecord['reported_level'];
    id: number;
    now: number;
    metric?: string;
    batch?: number;
    notify?: AlarmRecord['notify'];
    k?: number;
    seq?: number;
    upgrades?: AlarmRecord['upgrades'];
    recoveryMetric?: string;
    why: Why;
    window?: AlarmRecord['window'];
    upgradeCounts?: number[];
    /** Seconds delayed work may still read the record (window flush, delay recovery). */
    keepAtLeast?: number;
  },
): AlarmRecord {
  const history: HistoryRecord = {
    id: d.id,
    uuid: alarm.uuid,
    task_id: task.id,
    batch: d.batch ?? 0,
    metric: d.metric ?? '',
    level: d.level,
    ctn: alarm.ctn,
    notice_time: alarm.notice_time,
    created_at: d.now,
  };
  return {
    uuid: alarm.uuid,
    task_id: task.id,
    outcome: d.outcome,
    history,
    reported_level: alarm.level,
    reported_at: alarm.reported_at,
    processed_at: d.now,
    // Stored with its robots sealed (one queued before robots were sealed has them in plain).
    ...(alarm.receiver ? { receiver: sealReceiverRobots(alarm.receiver) } : {}),
    selection: selectReceivers(task.receiver, factsOf(alarm, d.level), alarm.receiver),
    notify: d.notify ?? notifyOf(d.outcome),
    ...(d.k !== undefined ? { k: d.k } : {}),
    ...(d.seq !== undefined ? { seq: d.seq } : {}),
    upgrades: d.upgrades ?? [],
    workflow: d.outcome === 'compressed' && task.workflow?.enable === true,
    ...(d.recoveryMetric ? { recovery_metric: d.recoveryMetric } : {}),
    why: d.why,
    ...(d.window ? { window: d.window } : {}),
    ...(d.upgradeCounts?.length ? { upgrade_counts: d.upgradeCounts } : {}),
    expires_at: d.now + Math.max(retentionDaysOf(task) * 86_400, d.keepAtLeast ?? 0),
  };
}

/**
 * A paused task holds its delayed work until the pause ends (at most 7 days); a day more of margin.
 * A compressed alarm's record outlives its window and its metric's delay recovery by this much.
 */
export const HELD_WORK_MARGIN_SECONDS = 8 * 86_400;

/** The log entry of a stored alarm; a record written before records expired gets the task's retention. */
export const logged = (task: Task, r: AlarmRecord) =>
  entryOfRecord(r, r.expires_at ?? r.processed_at + retentionDaysOf(task) * 86_400);

/** The log entry of an alarm that has no record (filtered out, or of a task that stores nothing). */
export function loggedUnstored(
  task: Task,
  alarm: AlarmMessage,
  plan: Plan,
  why: Why,
  now: number,
): AlarmLogEntry {
  return {
    uuid: alarm.uuid,
    task_id: task.id,
    history_id: 0,
    created_at: now,
    level: plan.level,
    reported_level: alarm.level,
    decision: plan.kind,
    notify: plan.kind === 'drop' ? 'none' : 'now',
    upgrades: 0,
    stored: false,
    why,
    expires_at: now + retentionDaysOf(task) * 86_400,
  };
}
