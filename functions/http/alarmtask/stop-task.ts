import { stopTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskChanged } from '#shared/domain/tasks/responses.ts';

/** PUT /alarmtask/stop: running or paused -> stopped (API guide §5.9). */
export const handler = httpHandler<unknown, TaskChanged>({ auth: 'app+task', input: 'json' }, (_input, ctx) =>
  stopTask(ctx.task!),
);
