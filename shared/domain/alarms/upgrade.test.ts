import { describe, expect, it } from 'vitest';
import type { UpgradeStrategy } from '../tasks/model.ts';
import {
  firstBucket,
  maxInterval,
  strategyKey,
  trailingCount,
  upgradeStep,
  upgradeStrategies,
} from './upgrade.ts';

const strategy = (interval: number, count: number): UpgradeStrategy => ({
  interval,
  count,
  level: 3,
  reuse_receiver: 1,
});

describe('upgrade counting', () => {
  it('counts the minute buckets overlapping the trailing interval', () => {
    const now = 600 * 60 + 30; // 30 s into minute 600
    const buckets = new Map([
      [594, 100], // before the 5-minute window
      [595, 1], // overlaps its start
      [598, 2],
      [600, 3],
      [601, 50], // the future (clock skew): not counted
    ]);
    expect(firstBucket(now, 5)).toBe(595);
    expect(trailingCount(buckets, now, 5)).toBe(6);
    expect(trailingCount(buckets, now, 1)).toBe(3);
  });

  it('only enabled strategies with positive interval and count apply', () => {
    expect(upgradeStrategies(undefined)).toEqual([]);
    expect(upgradeStrategies({ enable: false, strategies: [strategy(5, 3)] })).toEqual([]);
    expect(upgradeStrategies({ enable: true, strategies: [strategy(5, 3), strategy(0, 1)] })).toEqual([
      strategy(5, 3),
    ]);
    expect(maxInterval([strategy(5, 3), strategy(30, 2)])).toBe(30);
    expect(maxInterval([])).toBe(0);
  });
});

describe('upgradeStep (API guide §9.5)', () => {
  const s = [strategy(5, 3), strategy(10, 5)];
  const minute = 1000;
  const at = (sec: number) => minute * 60 + sec;

  it('fires when the count reaches the strategy count, once per interval per strategy', () => {
    let fired: Record<string, number> = {};
    const buckets = new Map<number, number>();
    const results: string[][] = [];
    for (let i = 0; i < 7; i++) {
      buckets.set(minute, (buckets.get(minute) ?? 0) + 1);
      const r = upgradeStep(s, buckets, fired, at(i));
      fired = r.fired;
      results.push(r.fires.map((f) => `${f.key}:${f.zcount}`));
    }
    expect(results).toEqual([[], [], ['0.5.3:3'], [], ['1.10.5:5'], [], []]);
    expect(fired).toEqual({ [strategyKey(s[0], 0)]: at(2), [strategyKey(s[1], 1)]: at(4) });
  });

  it('fires again once its interval has passed since it last fired', () => {
    const buckets = new Map([[minute + 6, 3]]);
    const fired = { '0.5.3': at(0) };
    expect(upgradeStep(s, buckets, fired, at(299)).fires.map((f) => f.key)).toEqual([]);
    expect(upgradeStep(s, buckets, fired, at(360)).fires.map((f) => f.key)).toEqual(['0.5.3']);
  });

  it('does not change the input map', () => {
    const fired = {};
    upgradeStep(s, new Map([[minute, 9]]), fired, at(1));
    expect(fired).toEqual({});
  });
});
