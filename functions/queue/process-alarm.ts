import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { processAlarmBatch } from '#shared/domain/alarms/pipeline.ts';
import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';

/**
 * SQS consumer of the alarm queue: the alarm processing pipeline (behavior 7). Partial batch
 * responses: a message whose processing failed is reported and retried, the others are acknowledged.
 */
export const handler = observed(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  await loadSealKey();
  const failed = await processAlarmBatch(event.Records.map((r) => ({ id: r.messageId, body: r.body })));
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});
