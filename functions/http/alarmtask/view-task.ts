import { viewTask } from '#shared/domain/tasks/reader.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { ID_SCHEMA } from '#shared/domain/validation.ts';
import type { TaskViewed } from '#shared/domain/tasks/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/view-task.ts';

const schema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: { uid: ID_SCHEMA, task_id: ID_SCHEMA },
};

/** GET /alarmtask/view?uid=&task_id=: a task's configuration for a user who may read it (no credentials). */
export const handler = httpHandler<{ uid: number; task_id: number }, TaskViewed>(
  { auth: reader(), input: queryInput, schema, validate },
  (input) => viewTask(input.uid, input.task_id),
);
