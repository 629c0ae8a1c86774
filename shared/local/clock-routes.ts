import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { asFunction } from './call-record.ts';
import { config } from '../config/env.ts';
import { queueUrl } from '../messaging/sqs.ts';
import { localSqsClient } from './queues.ts';
import { advanceClock, clockOffsetSeconds, nowSeconds } from '../clock.ts';
import { compileSchema } from '../domain/compile-schema.ts';
import { anyone } from '../http/auth/public.ts';
import { httpHandler } from '../http/handler.ts';
import { jsonBody, noInput } from '../http/input.ts';
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
 * forward and runs the scheduled function at once (one pass over what is due), then waits for the
 * due queue's consumer to have run it, so due work happens before the answer.
 */
export const handler = async (event: { requestContext: { http: { method: string } } }, context: unknown) =>
  event.requestContext.http.method === 'GET' ? show(event, context) : advance(event, context);

const show = httpHandler({ auth: anyone, input: noInput }, async () => ({
  now: nowSeconds(),
  offset_seconds: clockOffsetSeconds(),
}));

const advance = httpHandler<{ advance_seconds: number }, unknown>(
  { auth: anyone, input: jsonBody, schema, validate: compileSchema(schema) },
  async (input) => {
    advanceClock(input.advance_seconds);
    const run = await loadHandler(schedule.handler);
    const due = await asFunction('schedule', () =>
      run({ source: 'local.clock' }, lambdaContext('tocsin-schedule')),
    );
    await dueQueueDrained();
    return { now: nowSeconds(), offset_seconds: clockOffsetSeconds(), due };
  },
);

/** How long the clock waits for the due queue's consumer at most. */
const DRAIN_MS = 30_000;

/** The clock's own client: looking at the due queue is the local stack's business, not the service's. */
let watcher: SQSClient | undefined;

/** Resolves once the due queue holds nothing, waiting or in flight (or after DRAIN_MS). */
async function dueQueueDrained(): Promise<void> {
  const cfg = config();
  watcher ??= localSqsClient(cfg.sqsEndpoint as string, cfg.region);
  const deadline = Date.now() + DRAIN_MS;
  while (Date.now() < deadline) {
    const out = await watcher.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl('due'),
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const a = out.Attributes ?? {};
    if (
      Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) ===
      0
    )
      return;
    await new Promise((r) => setTimeout(r, 20));
  }
}
