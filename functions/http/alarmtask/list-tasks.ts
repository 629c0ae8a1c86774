import { type ListTasksInput, listTasks, listTasksSchema } from '#shared/domain/tasks/list.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /alarmtask/list?uid=&q=&department_id=&status=&tag_id=&limit=&cursor= (issue 10). */
export const handler = httpHandler<ListTasksInput, unknown>(
  { auth: 'app', input: 'query', schema: listTasksSchema },
  (input) => listTasks(input),
);
