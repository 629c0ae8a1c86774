import { updateFieldsSchema } from '#shared/domain/tasks/schemas.ts';
import { saveTaskFields } from '#shared/domain/replay/save-guard.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskStored } from '#shared/domain/tasks/responses.ts';

/**
 * PUT /alarmtask/updatefields: the listed paths are copied into the task (API guide §5.7). With
 * `replay_id`, only the configuration that what-if replay replayed, over the task it read (§13.7).
 */
export const handler = httpHandler<Record<string, unknown>, TaskStored>(
  { auth: 'app+task', input: 'json', schema: updateFieldsSchema },
  (body, ctx) => saveTaskFields(ctx.task!, body),
);
