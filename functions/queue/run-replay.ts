import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { runQueuedReplayMessages } from '#shared/domain/replay/service.ts';

/**
 * SQS consumer of the replay queue: what-if replays of windows too large to answer in their request
 * (API guide §13.7). A replay that fails for good is recorded as failed; one that fails otherwise is
 * reported and comes back once more.
 */
export const handler = observed(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  await loadSealKey();
  const failed = await runQueuedReplayMessages(
    event.Records.map((r) => ({
      id: r.messageId,
      body: r.body,
      receiveCount: Number(r.attributes.ApproximateReceiveCount) || 1,
    })),
  );
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});
