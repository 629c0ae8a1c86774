import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { processAlarmBatch } from '#shared/domain/alarms/pipeline.ts';
import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';

/**
 * SQS consumer of the alarm queue: the alarm processing pipeline (API guide §9). Partial batch
 * responses: a message whose processing failed is reported and retried, the others are acknowledged
 * (alarms of a metric other consumers kept committing first were handed back to the queue). The
 * invocation's remaining time bounds how long a contended metric commit is retried.
 */
export const handler = observed(async (event: SQSEvent, context): Promise<SQSBatchResponse> => {
  await loadSealKey();
  const failed = await processAlarmBatch(
    event.Records.map((r) => ({ id: r.messageId, body: r.body })),
    undefined,
    { remainingMs: context.getRemainingTimeInMillis() },
  );
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});
