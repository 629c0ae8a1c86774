import { startTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskChanged } from '#shared/domain/tasks/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { jsonBody } from '#shared/http/input.ts';

/** PUT /alarmtask/start: stopped or paused -> running (API guide §5.9). */
export const handler = httpHandler<unknown, TaskChanged>({ auth: taskAuth, input: jsonBody }, (_input, ctx) =>
  startTask(ctx.task!),
);
