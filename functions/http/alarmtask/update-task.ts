import { updateTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskStored } from '#shared/domain/tasks/responses.ts';

/** PUT /alarmtask/update: full replace; the body is validated by the service (API guide §5.6). */
export const handler = httpHandler<Record<string, unknown>, TaskStored>(
  { auth: 'app+task', input: 'json' },
  (body, ctx) => updateTask(ctx.task!, body),
);
