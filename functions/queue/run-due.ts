import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { nowSeconds } from '#shared/clock.ts';
import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { runDueBatch } from '#shared/domain/due/runner.ts';
import { batchOfEffects } from '#shared/domain/webhooks/deliver-now.ts';
import { dueHandlers } from '../schedule/due-handlers.ts';

/**
 * SQS consumer of the due queue: the due work the scheduled function leased, run with each kind's
 * handler (due-handlers.ts), the batch's webhook events first-attempted and its jobs queued together.
 * Partial batch response: only a message that cannot be read comes back.
 */
export const handler = observed(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  await loadSealKey();
  const failed = await runDueBatch(event.Records, dueHandlers, nowSeconds(), batchOfEffects());
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});
