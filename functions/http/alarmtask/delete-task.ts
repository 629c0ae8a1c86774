import { deleteTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskChanged } from '#shared/domain/tasks/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { formOrQuery } from '#shared/http/input.ts';

/** DELETE /alarmtask: task auth in a form body or the query string (API guide §1.3, §5.10). */
export const handler = httpHandler<unknown, TaskChanged>(
  { auth: taskAuth, input: formOrQuery },
  (_input, ctx) => deleteTask(ctx.task!),
);
