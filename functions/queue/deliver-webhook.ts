import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { deliverWebhooks } from '#shared/domain/webhooks/delivery.ts';

/** SQS consumer of the webhook queue (API guide §12): partial batch responses, retries by visibility. */
export const handler = observed(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  await loadSealKey();
  return deliverWebhooks(
    event.Records.map((r) => ({
      messageId: r.messageId,
      receiptHandle: r.receiptHandle,
      body: r.body,
      receiveCount: Number(r.attributes.ApproximateReceiveCount),
    })),
  );
});
