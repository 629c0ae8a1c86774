import { setRateLimit } from '#shared/domain/tasks/settings.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { RateLimitSet } from '#shared/domain/tasks/responses.ts';

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
  { auth: 'app+task', input: 'json', schema },
  (input, ctx) => setRateLimit(ctx.task!, input.rate_limit),
);
