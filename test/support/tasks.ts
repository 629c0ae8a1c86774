import { randomUUID } from 'node:crypto';
import { api } from './client.ts';

/**
 * Creating alarm tasks in tests. `createTask()` goes through the real `POST /alarmtask/store` and
 * fails loudly when the service refuses the body.
 */
// biome-ignore lint/suspicious/noExplicitAny: a request body under construction
export type TaskBody = Record<string, any>;

/** A type alias (not an interface) so it is assignable to index-signature types like RenderContext.task. */
export type CreatedTask = {
  id: number;
  name: string;
  token: string;
  secret: string;
  /** The body that was sent. */
  body: TaskBody;
};

/** A unique task name (names are unique across the service). */
export function uniqueTaskName(prefix = 'task'): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}

/** A valid create body: creator 1, department 1, stored alarms, e-mail to user 1; overrides merged shallowly. */
export function taskBody(overrides: TaskBody = {}): TaskBody {
  return {
    name: uniqueTaskName(),
    created_by: 1,
    department_id: 1,
    flag_save_db: 1,
    receiver: { channels: { email: [1] } },
    ...overrides,
  };
}

export async function createTask(overrides: TaskBody = {}): Promise<CreatedTask> {
  const body = taskBody(overrides);
  const res = await api.post('/alarmtask/store', body);
  if (res.code !== 0) throw new Error(`createTask failed: ${res.status} ${res.code} ${res.msg}`);
  const t = res.data.task;
  return { id: t.id, name: t.name, token: t.token, secret: t.secret, body };
}
