import { nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { ConflictError } from '../errors.ts';
import type { Task } from './model.ts';
import { getTask, setTaskSetting } from './repository.ts';

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
 * `PUT /alarmtask/ratelimit`: the task's alarm rate limit (behavior 6.1: "configurable per task"),
 * alarms per second per container; 0 returns to the deployment default (`ALARM_RATE_LIMIT`). It
 * reaches the alarm path within `TASK_CACHE_SECONDS`.
 */
export async function setRateLimit(task: Task, rateLimit: number) {
  await writeTaskSetting(task, 'rate_limit', rateLimit > 0 ? rateLimit : undefined);
  return {
    id: task.id,
    rate_limit: rateLimit > 0 ? rateLimit : config().alarmRateLimit,
    default: rateLimit === 0,
  };
}
