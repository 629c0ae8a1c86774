import { nowMs } from '../../clock.ts';
import { perContainer } from '../../container.ts';
import { logger } from '../../log.ts';
import { count as countMetric } from '../../metrics.ts';
import { leaseRateTokens, type RateLease } from './rate-repository.ts';

/**
 * The per-task alarm rate limit, shared by every container (docs/rate-limits.md).
 *
 * Fixed one-second windows: a task takes at most `limit` alarms per Unix second, counted in one table
 * item per task and second (`rate-repository.ts`). A container does not write per alarm: it leases
 * tokens of the current second in chunks (what the request needs, and up to a tenth of the limit,
 * sized by how many alarms of the task this container saw in the last second) with one conditional
 * UpdateItem, and spends them from memory within that second. Leases that are not spent by the end of
 * their second are lost: containers may admit fewer than the limit, never more. Once a container
 * learns the second is used up, it refuses locally until the next one, so a flood of refused alarms
 * costs about one write per container per second, not one per alarm.
 *
 * When the table cannot be reached (throttled, failing, slower than the timeout), the limiter fails
 * open to a count of the container's own (the same windows, kept in memory) for the rest of that
 * second and the next, then tries the table again: an alarm service must not refuse alarms because
 * its limiter is sick, and the container's own count still bounds what one container admits. Every
 * alarm admitted that way is counted in the `RateLimitDegraded` metric and each such episode is
 * logged.
 */
export interface RateStore {
  /**
   * Adds `want` tokens to the count of the task's `second` if it stays within `limit`, else the
   * remainder if it covers `need`, else nothing.
   */
  lease(
    taskId: number,
    second: number,
    need: number,
    want: number,
    limit: number,
    signal?: AbortSignal,
  ): Promise<RateLease>;
}

export type Admission =
  | { ok: true }
  /**
   * `window`: this second's alarms are used up (retry in the next second); `cap`: a request of more
   * alarms than the limit, which no second can take (the sender must send fewer per request).
   */
  | { ok: false; reason: 'window' | 'cap'; retryAfter: number };

/**
 * Tokens one window item holds at most. A task whose limit is larger (a hot task at thousands of
 * alarms a second) has each second split over ceil(limit / TOKENS_PER_ITEM) items, each holding its
 * share: every container starts leasing from an item of its own choosing and moves to the next when
 * that one is used up, so the task's leases spread over several partitions instead of throttling one
 * item (which would make the limiter count per container: RateLimitDegraded). A request may not carry
 * more alarms than one item holds.
 */
export const TOKENS_PER_ITEM = 1_000;

/** Items a second of a task with this limit is split over. */
export const itemsFor = (limit: number) => Math.max(1, Math.ceil(limit / TOKENS_PER_ITEM));

/** The share of the limit item `shard` of `items` holds (the first ones take the remainder). */
export const shareOf = (limit: number, items: number, shard: number) =>
  Math.floor(limit / items) + (shard < limit % items ? 1 : 0);

/** Where this container starts leasing in a split second. */
const firstShard = perContainer(() => Math.floor(Math.random() * 1_000_000));

/**
 * A store over window items leased by `leaseItem` (leaseRateTokens): one item per second, or the
 * second split (TOKENS_PER_ITEM). `used` of a grant from a split second is its item's (the container
 * then never takes the second for fuller than it is); a second whose every item is used up is `limit`.
 */
export function splitRateStore(
  leaseItem: typeof leaseRateTokens,
  start: () => number = firstShard,
): RateStore {
  return {
    async lease(taskId, second, need, want, limit, signal) {
      const items = itemsFor(limit);
      if (items === 1) return leaseItem(taskId, second, need, want, limit, signal);
      const from = start() % items;
      for (let i = 0; i < items; i++) {
        const shard = (from + i) % items;
        const share = shareOf(limit, items, shard);
        if (need > share) continue;
        const lease = await leaseItem(taskId, second, need, Math.min(want, share), share, signal, shard);
        if (lease.granted > 0) return lease;
      }
      return { granted: 0, used: limit };
    },
  };
}

/** The table in DynamoDB: the count every container shares. */
export const tableRateStore: RateStore = splitRateStore(leaseRateTokens);

/**
 * A count in memory, with the table's rules: a container's own count when the table cannot be
 * reached (and a stand-in for the table in unit tests).
 */
export class MemoryRateStore implements RateStore {
  private readonly windows = new Map<number, { second: number; used: number }>();

  async lease(taskId: number, second: number, need: number, want: number, limit: number): Promise<RateLease> {
    return this.leaseNow(taskId, second, need, want, limit);
  }

  leaseNow(taskId: number, second: number, need: number, want: number, limit: number): RateLease {
    if (this.windows.size > SWEEP_ABOVE) {
      for (const [id, w] of this.windows) if (w.second < second - 1) this.windows.delete(id);
    }
    let w = this.windows.get(taskId);
    if (!w || w.second < second) {
      w = { second, used: 0 };
      this.windows.set(taskId, w);
    }
    // A lease for a second already past: nothing (its requests are answered by now).
    if (w.second > second) return { granted: 0, used: limit };
    const rest = limit - w.used;
    const granted = rest >= want ? want : rest >= need ? rest : 0;
    w.used += granted;
    return { granted, used: w.used };
  }
}

/** A container's tokens of one task for one second. */
interface Pool {
  second: number;
  /** Leased and not spent yet. */
  left: number;
  /** The second's count as this container last saw it (it only grows within a second). */
  used: number;
  /** Alarms asked for in this second, admitted or not (this container's demand). */
  asked: number;
  /** `asked` of the previous second. */
  lastAsked: number;
  /** The lease in flight, if any. */
  leasing?: Promise<void>;
}

/** A lease is at most this fraction of the limit. */
const LEASE_SHARE = 10;
/** Retry-After of a request over the per-request cap: it passes only once the task's limit is raised. */
export const CAP_RETRY_AFTER_SECONDS = 60;
const DEFAULT_TIMEOUT_MS = 1_000;
const SWEEP_ABOVE = 10_000;

export interface RateLimiterOptions {
  store?: RateStore;
  now?: () => number;
  /** How long a lease may take before the container counts on its own (ms). */
  timeoutMs?: number;
}

export class RateLimiter {
  private readonly pools = new Map<number, Pool>();
  private readonly store: RateStore;
  private readonly own = new MemoryRateStore();
  private readonly now: () => number;
  private readonly timeoutMs: number;
  /** Until when (ms) this container counts on its own after the table failed. */
  private degradedUntil = 0;

  constructor(opts: RateLimiterOptions = {}) {
    this.store = opts.store ?? tableRateStore;
    this.now = opts.now ?? nowMs;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Takes `count` tokens of `taskId`'s current second, all or none. A request of more than `limit`
   * alarms is refused outright (`cap`): no second could ever take it.
   */
  async take(taskId: number, limit: number, count = 1): Promise<Admission> {
    const now = this.now();
    if (count > Math.min(limit, TOKENS_PER_ITEM))
      return { ok: false, reason: 'cap', retryAfter: CAP_RETRY_AFTER_SECONDS };
    // The request counts in this pool's second even if the task moves on to the next one meanwhile (a
    // clock that stepped back keeps counting in the second it had reached).
    const pool = this.poolOf(taskId, Math.floor(now / 1000));
    pool.asked += count;
    for (;;) {
      if (pool.left >= count) {
        pool.left -= count;
        return ADMITTED;
      }
      // The second's count only grows: what did not fit when last seen will not fit now.
      if (limit - pool.used < count - pool.left) return this.refusal(now);
      // One lease at a time per task and container: concurrent requests (the local stack serves
      // many at once) wait for it and spend what it brought before leasing again.
      if (!pool.leasing) break;
      await pool.leasing;
    }
    const held = pool.left;
    const need = count - held;
    pool.left = 0;
    const demand = Math.max(pool.lastAsked, pool.asked);
    const want = Math.max(need, Math.min(Math.ceil(limit / LEASE_SHARE), demand));
    let leased = () => {};
    pool.leasing = new Promise<void>((resolve) => {
      leased = resolve;
    });
    try {
      const { lease, own } = await this.lease(taskId, pool.second, need, want, limit);
      pool.used = Math.max(pool.used, lease.used);
      if (lease.granted < need) {
        pool.left += held;
        return this.refusal(now);
      }
      pool.left += held + lease.granted - count;
      if (own) countMetric('RateLimitDegraded', {}, count);
      return ADMITTED;
    } finally {
      pool.leasing = undefined;
      leased();
    }
  }

  private async lease(
    taskId: number,
    second: number,
    need: number,
    want: number,
    limit: number,
  ): Promise<{ lease: RateLease; own: boolean }> {
    const ownLease = () => ({ lease: this.own.leaseNow(taskId, second, need, want, limit), own: true });
    if (this.now() < this.degradedUntil) return ownLease();
    try {
      const signal = AbortSignal.timeout(this.timeoutMs);
      return { lease: await this.store.lease(taskId, second, need, want, limit, signal), own: false };
    } catch (err) {
      this.degradedUntil = (second + 2) * 1000;
      logger.warn('rate limit: the shared count could not be reached, counting per container', {
        taskId,
        until: new Date(this.degradedUntil).toISOString(),
        errorName: (err as Error | undefined)?.name,
        errorMessage: (err as Error | undefined)?.message,
      });
      return ownLease();
    }
  }

  private poolOf(taskId: number, second: number): Pool {
    let pool = this.pools.get(taskId);
    if (pool && pool.second >= second) return pool;
    if (!pool && this.pools.size > SWEEP_ABOVE) {
      for (const [id, p] of this.pools) if (p.second < second - 1) this.pools.delete(id);
    }
    const lastAsked = pool?.second === second - 1 ? pool.asked : 0;
    pool = { second, left: 0, used: 0, asked: 0, lastAsked };
    this.pools.set(taskId, pool);
    return pool;
  }

  /** Refused for this second: retry at the start of the next one. */
  private refusal(now: number): Admission {
    const wait = Math.ceil((Math.floor(now / 1000) * 1000 + 1000 - now) / 1000);
    return { ok: false, reason: 'window', retryAfter: Math.max(1, wait) };
  }
}

const ADMITTED: Admission = { ok: true };

/** What the intake needs of a limiter. */
export type AlarmLimiter = Pick<RateLimiter, 'take'>;

const limiterOf = perContainer(() => new RateLimiter());

/** The container's limiter (its leases and counts are the container's state). */
export const alarmRateLimiter: AlarmLimiter = {
  take: (taskId, limit, count) => limiterOf().take(taskId, limit, count),
};
