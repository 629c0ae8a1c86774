import { createTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskStored } from '#shared/domain/tasks/responses.ts';
import { appAuth } from '#shared/http/auth/app.ts';
import { jsonBody } from '#shared/http/input.ts';

/** POST /alarmtask/store: the body is validated by the service (API guide §5.2, §5.6). */
export const handler = httpHandler<Record<string, unknown>, TaskStored>(
  { auth: appAuth, input: jsonBody },
  (body) => createTask(body),
);
