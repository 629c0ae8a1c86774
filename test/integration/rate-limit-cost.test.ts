import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimiter, tableRateStore } from '../../shared/domain/alarms/rate-limit.ts';
import { takeStats } from '../../shared/local/stats.ts';

/**
 * What the shared rate limit costs in DynamoDB calls per alarm (docs/rate-limits.md, "Cost"): the real
 * limiter against the stack's DynamoDB Local, on a simulated clock (alarms spread evenly over each
 * second), counted by the local stack's call statistics (`TOCSIN_STATS=1`).
 */
const saved = process.env.TOCSIN_STATS;
beforeAll(() => {
  // Counted on the clients the local adapter readies (test/support/worker-env.ts installs it).
  process.env.TOCSIN_STATS = '1';
});
afterAll(() => {
  if (saved === undefined) delete process.env.TOCSIN_STATS;
  else process.env.TOCSIN_STATS = saved;
});

interface Cost {
  alarms: number;
  admitted: number;
  calls: number;
  units: number;
  perAlarm: number;
  /** Leases (UpdateItem calls) in each simulated second. */
  callsPerSecond: number[];
  /** Alarms taken in each simulated second. */
  admittedPerSecond: number[];
  /** Calls per alarm from the second second on (warm containers). */
  warmPerAlarm: number;
}

/** `tasks` tasks sending `rate` alarms/s each to `containers` containers for `seconds` s, limit 200. */
async function measure(tasks: number, rate: number, containers: number, seconds: number): Promise<Cost> {
  const base = 1_700_000_000_000 + randomInt(100_000) * 1000;
  const first = 800_000_000 + randomInt(1_000_000) * 1000;
  const at = { now: base };
  const limiters = Array.from(
    { length: containers },
    () => new RateLimiter({ store: tableRateStore, now: () => at.now, timeoutMs: 30_000 }),
  );
  const perSecond = tasks * rate;
  const callsPerSecond: number[] = [];
  const admittedPerSecond: number[] = [];
  let admitted = 0;
  let units = 0;
  takeStats(true);
  for (let s = 0; s < seconds; s++) {
    const before = admitted;
    for (let i = 0; i < perSecond; i++) {
      // Round robin over tasks; each task's alarms rotate over the containers.
      const task = first + (i % tasks);
      const limiter = limiters[((i % tasks) + Math.floor(i / tasks)) % containers];
      if ((await limiter.take(task, 200)).ok) admitted++;
      at.now = base + s * 1000 + Math.floor(((i + 1) * 1000) / perSecond) - 1;
    }
    at.now = base + (s + 1) * 1000;
    const counted = takeStats(true).dynamodb['UpdateItem RATE'] ?? { calls: 0, units: 0 };
    callsPerSecond.push(counted.calls);
    admittedPerSecond.push(admitted - before);
    units += counted.units;
  }
  const alarms = perSecond * seconds;
  const calls = callsPerSecond.reduce((a, b) => a + b, 0);
  const warm = callsPerSecond.slice(1).reduce((a, b) => a + b, 0);
  return {
    alarms,
    admitted,
    calls,
    units,
    perAlarm: calls / alarms,
    callsPerSecond,
    admittedPerSecond,
    warmPerAlarm: warm / (perSecond * (seconds - 1)),
  };
}

describe('DynamoDB calls the shared rate limit adds per alarm (limit 200/s)', () => {
  const figures: Record<string, Cost> = {};
  afterAll(() => {
    console.info('rate limit cost (UpdateItem RATE per alarm):');
    console.table(
      Object.fromEntries(
        Object.entries(figures).map(([k, c]) => [
          k,
          {
            ...c,
            callsPerSecond: c.callsPerSecond.join(' '),
            admittedPerSecond: c.admittedPerSecond.join(' '),
          },
        ]),
      ),
    );
  });

  it('one task at 200 alarms/s, one container: about a twentieth of a call per alarm', async () => {
    const c = await measure(1, 200, 1, 5);
    figures['1 task x 200/s, 1 container'] = c;
    expect(c.admitted).toBe(c.alarms);
    // 10 leases a second once warm (a tenth of the limit each), a few more in the first second
    expect(c.perAlarm).toBeLessThanOrEqual(0.06);
    expect(c.units).toBeLessThanOrEqual(c.calls * 1.01);
  });

  it('one task at 200 alarms/s over 10 containers: one lease per container per second once warm', async () => {
    const c = await measure(1, 200, 10, 5);
    figures['1 task x 200/s, 10 containers'] = c;
    // The first second's leases grow (1, 2, 4, ...) and overshoot: some go unspent, some alarms wait;
    // then each container leases the 20 it takes a second at once
    expect(c.admittedPerSecond[0]).toBeGreaterThan(150);
    expect(c.admittedPerSecond.slice(1)).toEqual([200, 200, 200, 200]);
    expect(c.callsPerSecond.slice(1)).toEqual([10, 10, 10, 10]);
  });

  it('100 tasks at 2 alarms/s each (200/s), one container: one lease per task per second', async () => {
    const c = await measure(100, 2, 1, 5);
    figures['100 tasks x 2/s, 1 container'] = c;
    expect(c.admitted).toBe(c.alarms);
    expect(c.perAlarm).toBeLessThanOrEqual(0.6);
  });

  it('100 tasks at 2 alarms/s each over 10 containers: at most one call per alarm', async () => {
    const c = await measure(100, 2, 10, 5);
    figures['100 tasks x 2/s, 10 containers'] = c;
    expect(c.admitted).toBe(c.alarms);
    expect(c.perAlarm).toBeLessThanOrEqual(1.01);
  });

  it('100 tasks at 200 alarms/s each (20,000/s), one container: a twentieth of a call per alarm', async () => {
    const c = await measure(100, 200, 1, 2);
    figures['100 tasks x 200/s, 1 container'] = c;
    expect(c.admitted).toBe(c.alarms);
    expect(c.perAlarm).toBeLessThanOrEqual(0.08);
  }, 300_000);
});
