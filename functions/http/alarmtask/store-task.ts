import { createTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskStored } from '#shared/domain/tasks/responses.ts';

/** POST /alarmtask/store: the body is validated by the service (interface 4.3, behavior 5.1). */
export const handler = httpHandler<Record<string, unknown>, TaskStored>(
  { auth: 'app', input: 'json' },
  (body) => createTask(body),
);
