import { redact } from '../channels/redact.ts';
import { taskForUser } from './access.ts';
import { ValidationError } from '../errors.ts';
import { TASK_PAUSED } from './model.ts';
import type { TaskStatusChanged, TaskViewed } from './responses.ts';
import { pauseTask, showTask, startTask, stopTask } from './service.ts';

/**
 * A task's configuration for a reader (GET /alarmtask/view): the detail `/alarmtask/show` gives,
 * authorised by the acting user's permission instead of the task secret, and without credentials:
 * no token or secret, robot access tokens masked and robot secrets hidden, the webhook URL without
 * its query string (it may carry a token).
 */
export async function viewTask(uid: number, taskId: number): Promise<TaskViewed> {
  const task = await taskForUser(uid, taskId);
  const { task: detail } = await showTask(task);
  const { token: _token, secret: _secret, ...rest } = detail;
  // Redaction replaces credentials by masked strings: the shape stays the detail's.
  const view = redact(rest) as TaskViewed['task'];
  // The console shows when a pause ends.
  const paused = detail.status === TASK_PAUSED && task.paused_until !== undefined;
  return { task: paused ? { ...view, paused_until: task.paused_until } : view };
}

export type StatusAction = 'stop' | 'start' | 'pause';

/**
 * PUT /alarmtask/status: stop, start or pause a task as a user with read-write permission (or role
 * 9): the console's way to act without the task secret. Same transitions and answers as
 * /alarmtask/stop|start|pause (409 when the task already is in that state).
 */
export async function changeTaskStatus(input: {
  uid: number;
  task_id: number;
  action: StatusAction;
  time?: number;
}): Promise<TaskStatusChanged> {
  const task = await taskForUser(input.uid, input.task_id, 'write');
  if (input.action === 'stop') return stopTask(task);
  if (input.action === 'start') return startTask(task);
  if (!input.time) throw new ValidationError([{ field: 'time', message: 'time is required to pause' }]);
  return pauseTask(task, input.time);
}
