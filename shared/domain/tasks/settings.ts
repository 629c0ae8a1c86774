import { nowSeconds } from '../../clock.ts';
import { config, defaultAlarmRetentionDays } from '../../config/env.ts';
import { ConflictError } from '../errors.ts';
import type { Task } from './model.ts';
import { getTask } from './repository.ts';
import { setTaskSetting } from './repository-writes.ts';
import type { RateLimitSet, RetentionSet } from './responses.ts';

/**
 * Sets (or, with `undefined`, removes) one of a task's own settings under its version, re-reading
 * the task when a concurrent write won (AP-T10).
 */
export async function writeTaskSetting(
  task: Task,
  name: Parameters<typeof setTaskSetting>[1],
  value: unknown,
): Promise<void> {
  const now = nowSeconds();
  let current: Task | undefined = task;
  for (let attempt = 0; ; attempt++) {
    if (!current) throw new ConflictError(`task [${task.id}] was deleted`);
    if (await setTaskSetting(current, name, value, now)) return;
    if (attempt >= 5) throw new ConflictError(`task [${task.id}] was changed concurrently, try again`);
    current = await getTask(task.id, true);
  }
}

/**
 * `PUT /alarmtask/ratelimit`: the task's alarm rate limit (API guide §5.11),
 * alarms per second shared by every container, and the most alerts one adapter request may hold
 * (docs/rate-limits.md); 0 returns to the deployment default (`ALARM_RATE_LIMIT`). It reaches the
 * alarm path within `TASK_CACHE_SECONDS`.
 */
export async function setRateLimit(task: Task, rateLimit: number): Promise<RateLimitSet> {
  await writeTaskSetting(task, 'rate_limit', rateLimit > 0 ? rateLimit : undefined);
  return {
    id: task.id,
    rate_limit: rateLimit > 0 ? rateLimit : config().alarmRateLimit,
    default: rateLimit === 0,
  };
}

/** Longest alarm retention a task may set (ten years). */
export const MAX_RETENTION_DAYS = 3650;

/** Days a task's processed alarms are kept: its own setting or the deployment default. */
export function retentionDaysOf(task: Pick<Task, 'alarm_retention_days'>): number {
  return task.alarm_retention_days ?? defaultAlarmRetentionDays();
}

/**
 * `PUT /alarmtask/retention`: how many days the task's processed alarms (their records, traces and
 * log) are kept, 0 = the deployment default (`ALARM_RETENTION_DAYS`, 90). Applies to alarms
 * processed from then on (each item carries its own expiry).
 */
export async function setRetention(task: Task, days: number): Promise<RetentionSet> {
  await writeTaskSetting(task, 'alarm_retention_days', days > 0 ? days : undefined);
  return {
    id: task.id,
    retention_days: days > 0 ? days : defaultAlarmRetentionDays(),
    default: days === 0,
  };
}
