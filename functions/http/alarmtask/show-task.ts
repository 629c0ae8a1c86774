import { showTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskShown } from '#shared/domain/tasks/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { queryInput } from '#shared/http/input.ts';

/** GET /alarmtask/show?id=&timestamp=&sign= (task auth in the query string). */
export const handler = httpHandler<unknown, TaskShown>({ auth: taskAuth, input: queryInput }, (_input, ctx) =>
  showTask(ctx.task!),
);
