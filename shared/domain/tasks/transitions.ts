import { ConflictError, ValidationError } from '../errors.ts';
import type { Task, TaskStatus } from './model.ts';
import { effectiveStatus, TASK_PAUSED, TASK_RUNNING, TASK_STOPPED } from './model.ts';

export const MAX_PAUSE_MINUTES = 10_080;

export function stopTransition(task: Task, now: number): { status: TaskStatus } {
  if (effectiveStatus(task, now) === TASK_STOPPED)
    throw new ConflictError(`task [${task.id}] is already stopped`);
  return { status: TASK_STOPPED };
}

export function startTransition(task: Task, now: number): { status: TaskStatus } {
  if (effectiveStatus(task, now) === TASK_RUNNING)
    throw new ConflictError(`task [${task.id}] is already running`);
  return { status: TASK_RUNNING };
}

export function pauseTransition(now: number, minutes: number): { status: TaskStatus; paused_until: number } {
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_PAUSE_MINUTES) {
    throw ValidationError.of('time', `must be an integer from 1 to ${MAX_PAUSE_MINUTES}`);
  }
  return { status: TASK_PAUSED, paused_until: now + minutes * 60 };
}
