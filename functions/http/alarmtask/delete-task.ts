import { deleteTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskChanged } from '#shared/domain/tasks/responses.ts';

/** DELETE /alarmtask: task auth in a form body or the query string (API guide §1.3, §5.10). */
export const handler = httpHandler<unknown, TaskChanged>(
  { auth: 'app+task', input: 'form-or-query' },
  (_input, ctx) => deleteTask(ctx.task!),
);
