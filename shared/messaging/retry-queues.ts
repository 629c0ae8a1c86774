import { logger } from '../log.ts';

/** Where a consumer's retries and dead letters go (queueRetries). */
export interface RetryQueues<B> {
  /** Puts messages on the consumer's queue again, each delayed (their retries). */
  requeue(messages: { body: B; delaySeconds: number }[]): Promise<void>;
  /** Puts messages whose retries are used up in the queue's dead-letter queue. */
  deadLetter(bodies: B[]): Promise<void>;
}

/**
 * Queues a consumer's retries (each a delayed message) and its dead letters, both at once. Returns
 * the entries that could not be queued: their messages must come back (by the queue's visibility
 * timeout) instead of being deleted, so nothing is lost.
 */
export async function queueRetries<B, E extends { body: B }>(
  what: string,
  retries: (E & { delaySeconds: number })[],
  dead: E[],
  deps: RetryQueues<B>,
): Promise<E[]> {
  const back: E[] = [];
  const settle = async (kind: string, list: E[], put: () => Promise<void>) => {
    if (list.length === 0) return;
    await put().catch((err) => {
      logger.warn(`could not queue ${what} ${kind}`, { count: list.length, error: err as Error });
      back.push(...list);
    });
  };
  await Promise.all([
    settle('retries', retries, () =>
      deps.requeue(retries.map(({ body, delaySeconds }) => ({ body, delaySeconds }))),
    ),
    settle('dead letters', dead, () => deps.deadLetter(dead.map((d) => d.body))),
  ]);
  return back;
}
