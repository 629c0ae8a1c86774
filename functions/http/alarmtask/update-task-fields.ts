import { updateFieldsSchema } from '#shared/domain/tasks/schemas.ts';
import { updateTaskFields } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskStored } from '#shared/domain/tasks/responses.ts';

/** PUT /alarmtask/updatefields: the listed paths are copied into the task (API guide §5.7). */
export const handler = httpHandler<Record<string, unknown>, TaskStored>(
  { auth: 'app+task', input: 'json', schema: updateFieldsSchema },
  (body, ctx) => updateTaskFields(ctx.task!, body),
);
