import { nowMs } from '../../clock.ts';
import { perContainer } from '../../container.ts';
import { logger } from '../../log.ts';
import { count as countMetric } from '../../metrics.ts';
import {
  aheadRoom,
  laterSeconds,
  leaseRateTokens,
  type LookAhead,
  type RateLease,
} from './rate-repository.ts';

/**
 * The per-task alarm rate limit, shared by every container (docs/rate-limits.md).
 *
 * Fixed one-second windows: a task takes at most `limit` alarms per Unix second, counted per second
 * in one table item per task and minute (`rate-repository.ts`). A container does not write per alarm:
 * it leases tokens of the current second in chunks (what the request needs, and up to a tenth of the
 * limit, sized by how many alarms of the task this container saw in the last second) with one
 * conditional UpdateItem, and spends them from memory within that second. A task far below its limit
 * (twice its rate fits in such a chunk) also reserves, in the same write, twice its rate in each later
 * second of the minute (look-ahead, filling no second beyond half the limit): it then pays about one
 * write a minute instead of one a second. Tokens not spent by the end of their second are lost:
 * containers may admit fewer than the limit, never more. Once a container learns the second is used
 * up, it refuses locally until the next one, so a flood of refused alarms costs about one write per
 * container per second, not one per alarm.
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
   * remainder if it covers `need`, else nothing; with `ahead`, reserves `ahead.tokens` in the later
   * seconds of the minute that stay within half the limit.
   */
  lease(
    taskId: number,
    second: number,
    need: number,
    want: number,
    limit: number,
    ahead?: LookAhead,
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
 * A store over window items leased by `leaseItem` (leaseRateTokens): one item per minute, or the
 * minute split (TOKENS_PER_ITEM). `used` of a grant from a split second is its item's (the container
 * then never takes the second for fuller than it is); a second whose every item is used up is `limit`.
 */
export function splitRateStore(
  leaseItem: typeof leaseRateTokens,
  start: () => number = firstShard,
): RateStore {
  return {
    async lease(taskId, second, need, want, limit, ahead, signal) {
      const items = itemsFor(limit);
      if (items === 1) return leaseItem(taskId, second, need, want, limit, ahead, signal);
      const from = start() % items;
      for (let i = 0; i < items; i++) {
        const shard = (from + i) % items;
        const share = shareOf(limit, items, shard);
        if (need > share) continue;
        // A quiet task's look-ahead too (a high limit is no high rate): reserved in this item, within
        // half its share.
        const lease = await leaseItem(taskId, second, need, Math.min(want, share), share, ahead, signal, shard);
        if (lease.granted > 0) return lease;
      }
      return { granted: 0, used: limit, reserved: [] };
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
  /** Per task, each second's count. */
  private readonly windows = new Map<number, Map<number, number>>();

  async lease(
    taskId: number,
    second: number,
    need: number,
    want: number,
    limit: number,
    ahead?: LookAhead,
    _signal?: AbortSignal,
  ): Promise<RateLease> {
    return this.leaseNow(taskId, second, need, want, limit, ahead);
  }

  leaseNow(
    taskId: number,
    second: number,
    need: number,
    want: number,
    limit: number,
    ahead?: LookAhead,
  ): RateLease {
    let w = this.windows.get(taskId);
    if (!w) {
      if (this.windows.size > SWEEP_ABOVE) this.sweep(second);
      w = new Map();
      this.windows.set(taskId, w);
    }
    for (const s of w.keys()) if (s < second - 60) w.delete(s);
    const used = w.get(second) ?? 0;
    const rest = limit - used;
    const granted = rest >= want ? want : rest >= need ? rest : 0;
    if (granted === 0) return { granted: 0, used, reserved: [] };
    w.set(second, used + granted);
    const reserved = ahead
      ? laterSeconds(second, ahead.through).filter((s) => (w.get(s) ?? 0) <= aheadRoom(limit) - ahead.tokens)
      : [];
    for (const s of reserved) w.set(s, (w.get(s) ?? 0) + (ahead?.tokens ?? 0));
    return { granted, used: used + granted, reserved };
  }

  private sweep(second: number) {
    for (const [id, w] of this.windows) {
      if (Math.max(...w.keys()) < second - 60) this.windows.delete(id);
    }
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
  /** Tokens this second started with (reserved by an earlier look-ahead). */
  started: number;
  /** Tokens reserved in later seconds (look-ahead), by second. */
  reserved: Map<number, number>;
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
    const chunk = Math.ceil(limit / LEASE_SHARE);
    // Far below the limit (twice the demand fits in a chunk, and in half the limit): reserve it in
    // the minute's later seconds too, unless a reservation already covers the next one.
    const perSecond = 2 * demand;
    const ahead =
      perSecond <= Math.min(chunk, aheadRoom(limit)) && !pool.reserved.has(pool.second + 1)
        ? { tokens: perSecond, through: pool.second + 59 }
        : undefined;
    // What the second is likely to ask for beyond what it started with (with a look-ahead, as much
    // as each later second gets).
    const want = Math.max(need, Math.min(chunk, demand - pool.started), ahead?.tokens ?? 0);
    let leased = () => {};
    pool.leasing = new Promise<void>((resolve) => {
      leased = resolve;
    });
    try {
      const { lease, own } = await this.lease(taskId, pool.second, need, want, limit, ahead);
      pool.used = Math.max(pool.used, lease.used);
      for (const s of lease.reserved) pool.reserved.set(s, ahead?.tokens ?? 0);
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
    ahead?: LookAhead,
  ): Promise<{ lease: RateLease; own: boolean }> {
    const ownLease = () => ({
      lease: this.own.leaseNow(taskId, second, need, want, limit, ahead),
      own: true,
    });
    if (this.now() < this.degradedUntil) return ownLease();
    try {
      const signal = AbortSignal.timeout(this.timeoutMs);
      return {
        lease: await this.store.lease(taskId, second, need, want, limit, ahead, signal),
        own: false,
      };
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
    // Tokens reserved earlier for this second are this second's first; later ones stay reserved.
    const reserved = new Map([...(pool?.reserved ?? [])].filter(([s]) => s > second));
    const left = pool?.reserved.get(second) ?? 0;
    pool = { second, left, used: left, asked: 0, lastAsked, started: left, reserved };
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
