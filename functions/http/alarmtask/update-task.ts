import { saveTask } from '#shared/domain/replay/save-guard.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskStored } from '#shared/domain/tasks/responses.ts';

/**
 * PUT /alarmtask/update: full replace; the body is validated by the service (API guide §5.6). With
 * `replay_id`, only the configuration that what-if replay replayed, over the task it read (§13.7).
 */
export const handler = httpHandler<Record<string, unknown>, TaskStored>(
  { auth: 'app+task', input: 'json' },
  (body, ctx) => saveTask(ctx.task!, body),
);
