import { setRateLimit } from '#shared/domain/tasks/settings.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { RateLimitSet } from '#shared/domain/tasks/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/rate-limit-task.ts';

const schema = {
  type: 'object',
  required: ['rate_limit'],
  properties: {
    rate_limit: {
      type: 'integer',
      minimum: 0,
      maximum: 100_000,
      'x-message': 'must be 0 (the deployment default) to 100000 alarms per second',
    },
  },
};

/** PUT /alarmtask/ratelimit: the task's alarm rate limit (API guide §5.11), 0 = the deployment default. */
export const handler = httpHandler<{ rate_limit: number }, RateLimitSet>(
  { auth: taskAuth, input: jsonBody, schema, validate },
  (input, ctx) => setRateLimit(ctx.task!, input.rate_limit),
);
