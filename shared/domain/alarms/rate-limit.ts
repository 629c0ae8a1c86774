import { nowMs } from '../../clock.ts';

/**
 * Per-task alarm rate limit of `/alarm/report` (behavior 6.1, 12): a token bucket per task holding
 * at most `limit` tokens and refilled at `limit` tokens per second, so a task may burst up to its
 * limit and sustain its limit per second.
 *
 * The buckets live in the memory of one container: the hot path writes nothing to the table and no
 * per-task counter item can become hot. The price is that the limit is enforced per container, so
 * the effective cluster-wide limit of a task is `limit x concurrently warm containers` serving it
 * (API Gateway's per-route throttling and the Lambda's reserved concurrency bound the total).
 */
interface Bucket {
  tokens: number;
  at: number;
}

/** Buckets idle for this long are full again and can be forgotten. */
const IDLE_MS = 60_000;
const SWEEP_ABOVE = 10_000;

export class RateLimiter {
  private readonly buckets = new Map<number, Bucket>();

  constructor(private readonly now: () => number = nowMs) {}

  /**
   * Takes `count` tokens for `taskId` (all or none); false when the task reached `limit` alarms per
   * second. A batch larger than the limit (a monitor's notification of many alerts) needs a full
   * bucket, else it could never pass.
   */
  take(taskId: number, limit: number, count = 1): boolean {
    const now = this.now();
    if (this.buckets.size > SWEEP_ABOVE) this.sweep(now);
    const b = this.buckets.get(taskId) ?? { tokens: limit, at: now };
    const elapsed = Math.max(0, now - b.at);
    b.tokens = Math.min(limit, b.tokens + (elapsed * limit) / 1000);
    b.at = now;
    this.buckets.set(taskId, b);
    const need = Math.min(count, limit);
    if (b.tokens < need) return false;
    b.tokens -= need;
    return true;
  }

  private sweep(now: number): void {
    for (const [id, b] of this.buckets) if (now - b.at > IDLE_MS) this.buckets.delete(id);
  }
}

/** The container's limiter. */
export const alarmRateLimiter = new RateLimiter();
