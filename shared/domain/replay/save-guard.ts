import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import type { Task } from '../tasks/model.ts';
import type { TaskStored } from '../tasks/responses.ts';
import { type SaveGuard, taskDeps, updateTask, updateTaskFields } from '../tasks/service.ts';
import { getReplay, REPLAY_TTL_DAYS } from './repository.ts';

/**
 * The guarded save (`PUT /alarmtask/update` and `/alarmtask/updatefields` with `replay_id`): the task
 * is saved only with the configuration that replay replayed, and only while the task is as the replay
 * read it (its version): 409 and nothing written otherwise. Without `replay_id`, the saves as ever.
 */

// biome-ignore lint/suspicious/noExplicitAny: request bodies, validated by the task rules
type Body = Record<string, any>;

/** The guard of a finished replay of `task` (404 when unknown or expired, 409 while it runs). */
export async function guardOf(task: Task, replayId: string, deps = { getReplay }): Promise<SaveGuard> {
  const item = await deps.getReplay(replayId);
  if (!item || item.task_id !== task.id)
    throw new NotFoundError(
      `replay [${replayId}] of task [${task.id}] not found (replays are kept ${REPLAY_TTL_DAYS} days)`,
    );
  if (item.status !== 'done' || item.task_version === undefined || !item.config_fingerprint)
    throw new ConflictError(`replay [${replayId}] has not finished (${item.status})`);
  return { what: `replay [${replayId}]`, version: item.task_version, fingerprint: item.config_fingerprint };
}

async function guarded(task: Task, body: Body): Promise<SaveGuard | undefined> {
  const id = body.replay_id;
  if (id === undefined) return undefined;
  if (typeof id !== 'string' || id === '' || id.length > 64)
    throw ValidationError.of('replay_id', 'must be a string of 1 to 64 characters');
  return guardOf(task, id);
}

/** PUT /alarmtask/update, guarded by `replay_id` when it names one. */
export async function saveTask(task: Task, body: Body): Promise<TaskStored> {
  return updateTask(task, body, taskDeps, await guarded(task, body));
}

/** PUT /alarmtask/updatefields, guarded by `replay_id` when it names one. */
export async function saveTaskFields(task: Task, body: Body): Promise<TaskStored> {
  return updateTaskFields(task, body, taskDeps, await guarded(task, body));
}
