import { maskRobot } from '../notifications/providers/robot.ts';
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

function webhookOrigin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return '(invalid URL)';
  }
}

/** Credentials out of a configuration, at any depth (receivers, dispatch items, upgrades, reminders). */
export function redact(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => redact(v, key));
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    // A robot: {webhook, secret} (in a robot channel, also without a secret).
    if (typeof o.webhook === 'string' && ('secret' in o || key === 'dinggroup' || key === 'yachgroup')) {
      return { ...o, webhook: maskRobot(o.webhook), secret: o.secret ? '(set)' : '' };
    }
    // The task webhook in the detail view: {url}.
    if (key === 'webhook' && typeof o.url === 'string')
      return { ...o, url: o.url ? webhookOrigin(o.url) : '' };
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, redact(v, k)]));
  }
  if (key === 'webhook' && typeof value === 'string' && value !== '') return webhookOrigin(value);
  return value;
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
