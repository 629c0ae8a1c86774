import { type ListTasksInput, listTasks, listTasksSchema } from '#shared/domain/tasks/list.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskList } from '#shared/domain/tasks/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/list-tasks.ts';

/**
 * GET /alarmtask/list?uid=&q=&department_id=&status=&tag_id=&limit=&cursor=: the tasks user `uid`
 * may read (role 9: every task), by a prefix of the name or its pinyin (case-insensitive), department,
 * status and tag, in pinyin order; each a summary with the user's access (never token or secret).
 * Follow `next_cursor` until it is empty (a page may hold fewer than `limit` tasks).
 */
export const handler = httpHandler<ListTasksInput, TaskList>(
  { auth: reader(), input: queryInput, schema: listTasksSchema, validate },
  (input) => listTasks(input),
);
