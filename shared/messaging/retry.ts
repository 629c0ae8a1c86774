/**
 * The visibility of a queue message whose attempt failed: the backoff of that retry (`backoff[n - 1]`
 * for attempt n, whole seconds, at most SQS's 12 hours); 0 once the retries are used up, so the
 * message comes back at once and the queue's redrive policy moves it to the dead-letter queue. The
 * webhook and notification consumers both retry this way.
 */
export function retryDelaySeconds(attempt: number, backoff: number[]): number {
  if (backoff.length === 0 || attempt > backoff.length) return 0;
  return Math.min(43_200, Math.max(0, Math.round(backoff[Math.max(0, attempt - 1)])));
}
