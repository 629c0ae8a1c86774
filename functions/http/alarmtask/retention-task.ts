import { MAX_RETENTION_DAYS, setRetention } from '#shared/domain/tasks/settings.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { RetentionSet } from '#shared/domain/tasks/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/retention-task.ts';

const schema = {
  type: 'object',
  required: ['retention_days'],
  properties: {
    retention_days: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_RETENTION_DAYS,
      'x-message': `must be 0 (the deployment default) to ${MAX_RETENTION_DAYS} days`,
    },
  },
};

/** PUT /alarmtask/retention: days the task's processed alarms are kept, 0 = the deployment default. */
export const handler = httpHandler<{ retention_days: number }, RetentionSet>(
  { auth: taskAuth, input: jsonBody, schema, validate },
  (input, ctx) => setRetention(ctx.task!, input.retention_days),
);
