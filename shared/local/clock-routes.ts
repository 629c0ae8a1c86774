import { asFunction } from './call-record.ts';
import { advanceClock, clockOffsetSeconds, nowSeconds } from '../clock.ts';
import { httpHandler } from '../http/handler.ts';
import { loadHandler } from './lambda.ts';
import { lambdaContext } from './lambda.ts';
import { schedule } from '../../infra/consumers.ts';

const schema = {
  type: 'object',
  required: ['advance_seconds'],
  properties: { advance_seconds: { type: 'integer', minimum: 0, maximum: 31_536_000 } },
};

/**
 * The local stack's test clock (never deployed). GET returns the service's now; POST moves it
 * forward and runs the scheduled function at once, so due work happens before the answer.
 */
export const handler = async (event: { requestContext: { http: { method: string } } }, context: unknown) =>
  event.requestContext.http.method === 'GET' ? show(event, context) : advance(event, context);

const show = httpHandler({ auth: 'none', input: 'none' }, async () => ({
  now: nowSeconds(),
  offset_seconds: clockOffsetSeconds(),
}));

const advance = httpHandler<{ advance_seconds: number }, unknown>(
  { auth: 'none', input: 'json', schema },
  async (input) => {
    advanceClock(input.advance_seconds);
    const run = await loadHandler(schedule.handler);
    const due = await asFunction('schedule', () =>
      run({ source: 'local.clock' }, lambdaContext('tocsin-schedule')),
    );
    return { now: nowSeconds(), offset_seconds: clockOffsetSeconds(), due };
  },
);
