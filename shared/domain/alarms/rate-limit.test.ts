import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { flushMetrics } from '../../metrics.ts';
import { jsonStdout } from '../../testing/stdout.ts';
import { logged } from '../../testing/logs.ts';
import {
  CAP_RETRY_AFTER_SECONDS,
  itemsFor,
  MemoryRateStore,
  RateLimiter,
  type RateStore,
  shareOf,
  splitRateStore,
  TOKENS_PER_ITEM,
} from './rate-limit.ts';
import type { LookAhead, RateLease } from './rate-repository.ts';

/** A store that counts its leases (calls and tokens) on top of a shared in-memory count. */
class CountingStore implements RateStore {
  calls = 0;
  constructor(readonly inner = new MemoryRateStore()) {}
  async lease(...args: Parameters<RateStore['lease']>): Promise<RateLease> {
    this.calls++;
    return this.inner.lease(...args);
  }
}

const clock = (start = 0) => {
  const c = { now: start, fn: () => c.now };
  return c;
};

describe('RateLimiter: fixed one-second windows', () => {
  it('takes up to the limit in a second, refuses the rest until the next second with Retry-After', async () => {
    // Arrange
    const c = clock(1_000_000);
    const limiter = new RateLimiter({ store: new MemoryRateStore(), now: c.fn });
    // Act
    const first = await Promise.all(Array.from({ length: 5 }, () => limiter.take(1, 5)));
    c.now += 400;
    const sixth = await limiter.take(1, 5);
    c.now += 600; // the next second
    const next = await limiter.take(1, 5);
    // Assert
    expect(first.every((a) => a.ok)).toBe(true);
    expect(sixth).toEqual({ ok: false, reason: 'window', retryAfter: 1 });
    expect(next.ok).toBe(true);
  });

  it('takes a batch all or none', async () => {
    const limiter = new RateLimiter({ store: new MemoryRateStore(), now: () => 0 });
    expect((await limiter.take(1, 5, 3)).ok).toBe(true);
    expect(await limiter.take(1, 5, 3)).toMatchObject({ ok: false, reason: 'window' }); // 2 left
    expect((await limiter.take(1, 5, 2)).ok).toBe(true);
    expect((await limiter.take(1, 5, 1)).ok).toBe(false);
  });

  it('refuses a request of more alarms than the limit outright (the per-request cap), without a lease', async () => {
    // Arrange: a task that has taken nothing this second
    const store = new CountingStore();
    const limiter = new RateLimiter({ store, now: () => 0 });
    // Act
    const over = await limiter.take(1, 5, 6);
    const at = await limiter.take(1, 5, 5);
    // Assert
    expect(over).toEqual({ ok: false, reason: 'cap', retryAfter: CAP_RETRY_AFTER_SECONDS });
    expect(at.ok).toBe(true);
    expect(store.calls).toBe(1);
  });

  it('keeps tasks apart', async () => {
    const limiter = new RateLimiter({ store: new MemoryRateStore(), now: () => 0 });
    expect((await limiter.take(1, 1)).ok).toBe(true);
    expect((await limiter.take(1, 1)).ok).toBe(false);
    expect((await limiter.take(2, 1)).ok).toBe(true);
  });

  it('keeps counting in the second it reached when the clock steps back', async () => {
    const c = clock(5_000);
    const limiter = new RateLimiter({ store: new MemoryRateStore(), now: c.fn });
    expect((await limiter.take(1, 1)).ok).toBe(true);
    c.now = 1_000;
    expect((await limiter.take(1, 1)).ok).toBe(false);
    c.now = 6_000;
    expect((await limiter.take(1, 1)).ok).toBe(true);
  });
});

describe('RateLimiter: leases', () => {
  it('a busy task costs a tenth of its limit in leases per second, not one per alarm', async () => {
    // Arrange: 200 alarms/s (one every 5 ms) at a limit of 200, for 3 seconds
    const store = new CountingStore();
    const c = clock(0);
    const limiter = new RateLimiter({ store, now: c.fn });
    const perSecond: number[] = [];
    let admitted = 0;
    // Act
    for (let s = 0; s < 3; s++) {
      const before = store.calls;
      for (let i = 0; i < 200; i++) {
        if ((await limiter.take(7, 200)).ok) admitted++;
        c.now += 5;
      }
      perSecond.push(store.calls - before);
    }
    // Assert: every alarm taken; a first second that grows its leases (1, 2, 4, ... up to 20), then
    // limit / (limit / 10) = 10 leases per second
    expect(admitted).toBe(600);
    expect(perSecond[0]).toBeLessThanOrEqual(15);
    expect(perSecond.slice(1)).toEqual([10, 10]);
  });

  it('a quiet task reserves twice its rate in the minute\u2019s later seconds: about one lease a minute', async () => {
    // Arrange: 2 alarms per second at a limit of 200, for two minutes from the start of a minute
    const store = new CountingStore();
    const c = clock(0);
    const limiter = new RateLimiter({ store, now: c.fn });
    const perSecond: number[] = [];
    let admitted = 0;
    // Act
    for (let s = 0; s < 120; s++) {
      const before = store.calls;
      if ((await limiter.take(7, 200)).ok) admitted++;
      if ((await limiter.take(7, 200)).ok) admitted++;
      perSecond.push(store.calls - before);
      c.now += 1_000;
    }
    // Assert: the first second one lease of 2 that reserves 2 a second ahead; the next minute's first
    // second one lease of 4 that reserves 4 a second ahead; nothing in between
    expect(admitted).toBe(240);
    expect(perSecond[0]).toBe(1);
    expect(perSecond[60]).toBe(1);
    expect(perSecond.reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('a task near its limit reserves nothing more ahead: leases of a tenth of the limit', async () => {
    // Arrange: 15 alarms per second at a limit of 20 (twice 15 is more than a tenth of 20)
    const store = new CountingStore();
    const c = clock(0);
    const limiter = new RateLimiter({ store, now: c.fn });
    const perSecond: number[] = [];
    // Act
    for (let s = 0; s < 5; s++) {
      const before = store.calls;
      for (let i = 0; i < 15; i++) await limiter.take(7, 20);
      perSecond.push(store.calls - before);
      c.now += 1_000;
    }
    // Assert: only the very first lease looked quiet (1 alarm: 2 a second reserved ahead); every
    // later second takes those 2, then leases chunks of 2 (a tenth of 20) for the other 13
    expect(perSecond.slice(1)).toEqual([7, 7, 7, 7]);
  });

  it('look-ahead fills no later second beyond half the limit: the other half stays for any container', async () => {
    // Arrange: ten containers of a quiet task (5 alarms/s each, limit 100), then a burst elsewhere
    const shared = new MemoryRateStore();
    const c = clock(0);
    const quiet = Array.from({ length: 10 }, () => new RateLimiter({ store: shared, now: c.fn }));
    for (const limiter of quiet) for (let i = 0; i < 5; i++) await limiter.take(1, 100);
    c.now += 1_000;
    const busy = new RateLimiter({ store: shared, now: c.fn });
    // Act: 100 alarms at once on a container that reserved nothing
    let burst = 0;
    for (let i = 0; i < 100; i++) if ((await busy.take(1, 100)).ok) burst++;
    // Assert: what the quiet containers reserved in second 1 is at most half the limit
    expect(burst).toBeGreaterThanOrEqual(50);
    expect(shared.leaseNow(1, 1, 1, 1, 100).granted).toBe(0);
  });

  it('once a second is used up, refuses from memory: a flood of refusals costs no lease per alarm', async () => {
    // Arrange
    const store = new CountingStore();
    const limiter = new RateLimiter({ store, now: () => 0 });
    for (let i = 0; i < 10; i++) await limiter.take(1, 10);
    const calls = store.calls;
    // Act
    const refused = await Promise.all(Array.from({ length: 1_000 }, () => limiter.take(1, 10)));
    // Assert
    expect(refused.every((a) => !a.ok)).toBe(true);
    expect(store.calls - calls).toBeLessThanOrEqual(1);
  });

  it('leases the remainder of a second when less than a chunk is left (another container took the rest)', async () => {
    // Arrange: container A takes 95 of 100 in second 0; B then wants a chunk of 10
    const shared = new MemoryRateStore();
    const a = new RateLimiter({ store: shared, now: () => 0 });
    const b = new RateLimiter({ store: shared, now: () => 0 });
    expect((await a.take(1, 100, 95)).ok).toBe(true);
    // Act: B's leases grow towards chunks of 10 alarms
    let ok = 0;
    for (let i = 0; i < 20; i++) if ((await b.take(1, 100)).ok) ok++;
    // Assert: B got exactly the 5 left, and the second's count is at the limit
    expect(ok).toBe(5);
    expect(shared.leaseNow(1, 0, 1, 1, 100)).toEqual({ granted: 0, used: 100, reserved: [] });
  });

  it('never admits more than the limit per second across containers sharing one count (any interleaving)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.array(
          fc.record({
            container: fc.integer({ min: 0, max: 3 }),
            count: fc.integer({ min: 1, max: 12 }),
            step: fc.integer({ min: 0, max: 150 }),
          }),
          { minLength: 1, maxLength: 300 },
        ),
        async (limit, requests) => {
          const c = clock(0);
          const shared = new MemoryRateStore();
          const containers = [0, 1, 2, 3].map(() => new RateLimiter({ store: shared, now: c.fn }));
          const admitted = new Map<number, number>();
          for (const r of requests) {
            const second = Math.floor(c.now / 1000);
            const a = await containers[r.container].take(3, limit, r.count);
            if (a.ok) admitted.set(second, (admitted.get(second) ?? 0) + r.count);
            else expect(a.reason).toBe(r.count > limit ? 'cap' : 'window');
            c.now += r.step;
          }
          for (const n of admitted.values()) expect(n).toBeLessThanOrEqual(limit);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('one container alone loses nothing: single alarms are taken up to the limit exactly', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 0, max: 400 }),
        async (limit, n) => {
          const limiter = new RateLimiter({ store: new MemoryRateStore(), now: () => 0 });
          let ok = 0;
          for (let i = 0; i < n; i++) if ((await limiter.take(1, limit)).ok) ok++;
          expect(ok).toBe(Math.min(n, limit));
        },
      ),
      { numRuns: 50 },
    );
  });

  it('concurrent requests of one container share its leases: all up to the limit are taken, no more', async () => {
    // Arrange: a store that answers later (a round trip), 60 requests at once at a limit of 25
    const inner = new MemoryRateStore();
    let calls = 0;
    let inFlight = 0;
    let mostInFlight = 0;
    const slow: RateStore = {
      lease: async (...args) => {
        calls++;
        inFlight++;
        mostInFlight = Math.max(mostInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        return inner.lease(...args);
      },
    };
    const limiter = new RateLimiter({ store: slow, now: () => 0 });
    // Act
    const results = await Promise.all(Array.from({ length: 60 }, () => limiter.take(1, 25)));
    // Assert: 25 taken, in leases of up to 3 (a tenth of 25), one at a time
    expect(results.filter((r) => r.ok)).toHaveLength(25);
    expect(results.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'window')).toBe(true);
    expect(mostInFlight).toBe(1);
    expect(calls).toBeLessThanOrEqual(Math.ceil(25 / 3) + 2);
  });
});

describe('RateLimiter: when the shared count fails (fails open to the container own count)', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of Object.keys(process.env)) delete process.env[k];
    Object.assign(process.env, saved);
    resetConfig();
  });

  it('admits against its own count, counts RateLimitDegraded, and tries the table again two seconds on', async () => {
    // Arrange: metrics as in AWS (written to stdout); a table that throttles
    Object.assign(process.env, {
      TABLE_NAME: 'tocsin-test',
      AWS_REGION: 'eu-west-1',
      SEAL_KEY: randomBytes(32).toString('base64'),
      TOCSIN_LOCAL: '0',
    });
    resetConfig();
    let failing = true;
    let calls = 0;
    const inner = new MemoryRateStore();
    const store: RateStore = {
      lease: async (...args) => {
        calls++;
        if (failing)
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ThrottlingException',
          });
        return inner.lease(...args);
      },
    };
    const c = clock(10_000);
    const limiter = new RateLimiter({ store, now: c.fn });
    // Act: 8 alarms in the failing second at a limit of 5
    const sick: boolean[] = [];
    const [, warnings] = await logged('warn', async () => {
      for (let i = 0; i < 8; i++) sick.push((await limiter.take(1, 5)).ok);
    });
    expect(warnings.map(([m, a]) => [m, a.taskId, a.errorName])).toEqual([
      ['rate limit: the shared count could not be reached, counting per container', 1, 'ThrottlingException'],
    ]);
    const lines = (await jsonStdout(() => flushMetrics())).filter((l) => '_aws' in l);
    const callsWhileSick = calls;
    c.now += 1_000; // still counting on its own
    const stillOwn = (await limiter.take(1, 5)).ok;
    failing = false;
    c.now += 1_000; // two seconds on: the table again
    const back = (await limiter.take(1, 5)).ok;
    // Assert
    expect(sick).toEqual([true, true, true, true, true, false, false, false]);
    expect(lines.filter((l) => 'RateLimitDegraded' in l).map((l) => l.RateLimitDegraded)).toEqual([5]);
    expect(callsWhileSick).toBe(1);
    expect(stillOwn).toBe(true);
    expect(calls).toBe(2);
    expect(back).toBe(true);
  });

  it('a lease slower than the timeout counts as a failure', async () => {
    // A table that never answers (it only gives up when the caller's signal aborts)
    const store: RateStore = {
      lease: (_t, _s, _n, _w, _l, _a, signal) =>
        new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    };
    const limiter = new RateLimiter({ store, now: () => 0, timeoutMs: 20 });
    const [taken, warnings] = await logged('warn', async () => [
      (await limiter.take(1, 2)).ok,
      (await limiter.take(1, 2)).ok,
      (await limiter.take(1, 2)).ok,
    ]);
    expect(taken).toEqual([true, true, false]);
    expect(warnings.map(([m, a]) => [m, a.errorName])).toEqual([
      ['rate limit: the shared count could not be reached, counting per container', 'TimeoutError'],
    ]);
  });
});

describe('a hot task: its minute split over several items', () => {
  /** Window items in memory, by `<task>#<minute>#<shard>`, and the leases each took. */
  function items() {
    const stores = new Map<number, MemoryRateStore>();
    const writes = new Map<number, number>();
    const leaseItem = async (
      taskId: number,
      second: number,
      need: number,
      want: number,
      limit: number,
      _ahead?: LookAhead,
      _signal?: AbortSignal,
      shard = 0,
    ): Promise<RateLease> => {
      writes.set(shard, (writes.get(shard) ?? 0) + 1);
      const store = stores.get(shard) ?? new MemoryRateStore();
      stores.set(shard, store);
      return store.lease(taskId, second, need, want, limit, _ahead);
    };
    return { leaseItem, writes };
  }

  it('lets a quiet task with a high limit reserve ahead too: about one lease a minute', async () => {
    // Arrange: 2 alarms per second at a limit of 5,000 (five items), for a minute from its start
    const { leaseItem, writes } = items();
    const c = clock(0);
    const limiter = new RateLimiter({ store: splitRateStore(leaseItem, () => 3), now: c.fn });
    let admitted = 0;
    // Act
    for (let s = 0; s < 60; s++) {
      if ((await limiter.take(7, 5 * TOKENS_PER_ITEM)).ok) admitted++;
      if ((await limiter.take(7, 5 * TOKENS_PER_ITEM)).ok) admitted++;
      c.now += 1_000;
    }
    // Assert: every alarm taken with one write, in the item this container starts from
    expect(admitted).toBe(120);
    expect([...writes]).toEqual([[3, 1]]);
  });

  it('keeps a task within its limit of one item as one item', async () => {
    const { leaseItem, writes } = items();
    const store = splitRateStore(leaseItem, () => 7);
    expect(await store.lease(1, 100, 1, 50, TOKENS_PER_ITEM)).toEqual({ granted: 50, used: 50, reserved: [] });
    expect([...writes.keys()]).toEqual([0]);
  });

  it('spreads the containers of a task over its items, never granting more than the limit in all', async () => {
    // Arrange: a limit of 5,000 a second (five items of 1,000), 40 containers starting where they will
    const { leaseItem, writes } = items();
    const limit = 5 * TOKENS_PER_ITEM;
    const containers = Array.from({ length: 40 }, (_, i) => splitRateStore(leaseItem, () => i * 7));
    // Act: every container leases 200 at a time until nothing is left
    let granted = 0;
    for (let round = 0; round < 5; round++)
      for (const c of containers) granted += (await c.lease(1, 100, 1, 200, limit)).granted;
    const last = await containers[0].lease(1, 100, 1, 200, limit);
    // Assert
    expect(itemsFor(limit)).toBe(5);
    expect(granted).toBe(limit);
    expect(last).toEqual({ granted: 0, used: limit, reserved: [] });
    expect([...writes.keys()].sort()).toEqual([0, 1, 2, 3, 4]);
    expect(Math.max(...writes.values())).toBeLessThan(2 * Math.min(...writes.values()) + 10);
    expect([0, 1, 2, 3, 4].map((s) => shareOf(5_003, 5, s))).toEqual([1_001, 1_001, 1_001, 1_000, 1_000]);
  });

  it('refuses a request of more alarms than one item holds, as it refuses one over the limit', async () => {
    const limiter = new RateLimiter({ store: new MemoryRateStore(), now: () => 0 });
    expect(await limiter.take(1, 10 * TOKENS_PER_ITEM, TOKENS_PER_ITEM + 1)).toEqual({
      ok: false,
      reason: 'cap',
      retryAfter: CAP_RETRY_AFTER_SECONDS,
    });
    expect(await limiter.take(1, 10 * TOKENS_PER_ITEM, TOKENS_PER_ITEM)).toEqual({ ok: true });
  });
});
