import { taskOncall } from '#shared/domain/tasks/oncall.ts';
import type { TaskOncall } from '#shared/domain/tasks/responses.ts';
import { ID_SCHEMA } from '#shared/domain/validation.ts';
import { httpHandler } from '#shared/http/handler.ts';

const schema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: { uid: ID_SCHEMA, task_id: ID_SCHEMA, days: { type: 'integer', minimum: 1, maximum: 90 } },
};

/**
 * GET /alarmtask/oncall?uid=&task_id=&days=14: who the task will page over the coming days, per
 * receiver that names a schedule, with its gaps.
 */
export const handler = httpHandler<{ uid: number; task_id: number; days?: number }, TaskOncall>(
  { auth: 'reader', input: 'query', schema },
  (input) => taskOncall(input),
);
