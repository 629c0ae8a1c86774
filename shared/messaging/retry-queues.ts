import { logger } from '../log.ts';

/** Where a consumer's retries and dead letters go (queueRetries). */
export interface RetryQueues<B> {
  /** Puts messages on the consumer's queue again, each delayed (their retries). */
  requeue(messages: { body: B; delaySeconds: number }[]): Promise<void>;
  /** Puts messages whose retries are used up in the queue's dead-letter queue. */
  deadLetter(bodies: B[]): Promise<void>;
  /**
   * Records that these messages are in the dead-letter queue (after it took them), so that a copy of
   * one, handed out again, does not put its work there a second time.
   */
  markDeadLettered?(bodies: B[]): Promise<void>;
}

/**
 * Queues a consumer's retries (each a delayed message) and its dead letters, both at once, then
 * marks the dead letters the dead-letter queue took (a mark that cannot be written is logged: at
 * worst a copy puts its work there twice). Returns the entries that could not be queued: their
 * messages must come back (by the queue's visibility timeout) instead of being deleted, so nothing
 * is lost.
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
  const moved = dead.filter((d) => !back.includes(d));
  if (moved.length > 0 && deps.markDeadLettered)
    await deps.markDeadLettered(moved.map((d) => d.body)).catch((err) => {
      logger.warn(`could not mark ${what} dead letters`, { count: moved.length, error: err as Error });
    });
  return back;
}
