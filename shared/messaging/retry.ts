import type { Retried } from '../contracts/messages.ts';

/**
 * The backoff of a retry: `backoff[n - 1]` seconds after attempt n failed (whole seconds, at most
 * SQS's 12 hours); 0 once the retries are used up. The webhook and notification consumers both retry
 * this way.
 */
export function retryDelaySeconds(attempt: number, backoff: number[]): number {
  if (backoff.length === 0 || attempt > backoff.length) return 0;
  return Math.min(43_200, Math.max(0, Math.round(backoff[Math.max(0, attempt - 1)])));
}

/** SQS delays a message at most 15 minutes: a longer backoff is chained (`retry_at_ms`). */
export const MAX_DELAY_SECONDS = 900;

/**
 * The message that carries `body` again after `seconds`, never held in flight: sent with a delay of
 * at most MAX_DELAY_SECONDS, and due at `retry_at_ms` when the backoff is longer (received earlier,
 * it goes back with the rest: notDueFor).
 */
export function delayedRetry<T extends Retried>(
  body: T,
  seconds: number,
  now: number = Date.now(),
): { body: T; delaySeconds: number } {
  const { retry_at_ms: _due, ...rest } = body;
  const out = { ...rest } as T;
  if (seconds > MAX_DELAY_SECONDS) out.retry_at_ms = now + seconds * 1000;
  return { body: out, delaySeconds: Math.min(seconds, MAX_DELAY_SECONDS) };
}

/** Seconds until a chained retry is due, or 0 when it is (a second early counts as due). */
export function notDueFor(body: Retried, now: number = Date.now()): number {
  const left = (body.retry_at_ms ?? 0) - now;
  return left > 1000 ? Math.ceil(left / 1000) : 0;
}

/** The delay of a chained retry received before it is due: it goes back as it came, with the rest. */
export const stillWaiting = (body: Retried, now: number = Date.now()): { delaySeconds: number } => ({
  delaySeconds: Math.min(notDueFor(body, now), MAX_DELAY_SECONDS),
});
