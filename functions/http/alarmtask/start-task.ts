import { startTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** PUT /alarmtask/start: stopped or paused -> running (behavior 5.4). */
export const handler = httpHandler<unknown, unknown>({ auth: 'app+task', input: 'json' }, (_input, ctx) =>
  startTask(ctx.task!),
);
