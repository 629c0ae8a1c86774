import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { loadNotifySecrets } from '#shared/config/env.ts';
import { fetchSecret } from '#shared/config/secrets.ts';
import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { deliverNotificationBatch } from '#shared/domain/notifications/delivery.ts';

/**
 * SQS consumer of the notify queue: one channel message per record (API guide §11). Failures are
 * reported per record (partial batch response) so only they come back, after their backoff.
 */
export const handler = observed(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  await loadNotifySecrets({ fetchSecret });
  await loadSealKey();
  return deliverNotificationBatch(
    event.Records.map((r) => ({
      messageId: r.messageId,
      receiptHandle: r.receiptHandle,
      body: r.body,
      receiveCount: Number(r.attributes.ApproximateReceiveCount) || 1,
      firstReceivedMs: Number(r.attributes.ApproximateFirstReceiveTimestamp) || undefined,
    })),
  );
});
