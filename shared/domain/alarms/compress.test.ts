import { describe, expect, it } from 'vitest';
import { stableStringify } from '../../json.ts';
import {
  type CompressNotify,
  compressStep,
  computeMetric,
  type StrategyConfig,
  strategyOf,
  type WindowState,
} from './compress.ts';

const facts = (ctn: Record<string, unknown>, level = 0) => ({ ctn, level, notice_time: 1_700_000_000 });

describe('computeMetric', () => {
  const byHost = {
    enable: true,
    method: 1 as const,
    conditions: [
      {
        rule: [
          { field: 'ctn.app', operator: 'eq', threshold: 'pay' },
          { field: 'ctn.host', operator: 'eq-self' },
        ],
      },
      { rule: [{ field: 'ctn.app', operator: 'isset' }] },
    ],
  };

  it('condition method: sorted rule tokens of the first matching condition, eq-self by actual value', () => {
    const a = computeMetric(7, byHost, facts({ app: 'pay', host: 'h1', x: 1 }));
    const b = computeMetric(7, byHost, facts({ app: 'pay', host: 'h1', x: 2 }));
    const c = computeMetric(7, byHost, facts({ app: 'pay', host: 'h2' }));
    const d = computeMetric(7, byHost, facts({ app: 'web', host: 'h1' }));
    expect(a).toMatch(/^[0-9a-f]{40}$/);
    expect(a).toBe(b);
    expect(a).not.toBe(c);
    expect(d).toMatch(/^[0-9a-f]{40}$/);
    expect(d).not.toBe(a);
  });

  it('condition method: rule order inside the condition does not matter', () => {
    const reversed = { ...byHost, conditions: [{ rule: [...byHost.conditions[0].rule].reverse() }] };
    expect(computeMetric(7, reversed, facts({ app: 'pay', host: 'h1' }))).toBe(
      computeMetric(7, byHost, facts({ app: 'pay', host: 'h1' })),
    );
  });

  it('condition method: no match -> undefined', () => {
    expect(computeMetric(7, byHost, facts({ other: 1 }))).toBeUndefined();
  });

  it('content method: the content with keys sorted at every depth, per task', () => {
    const content = { enable: true, method: 3 as const };
    const a = computeMetric(7, content, facts({ b: 1, a: { y: 2, x: 1 } }));
    const b = computeMetric(7, content, facts({ a: { x: 1, y: 2 }, b: 1 }));
    expect(a).toBe(b);
    expect(computeMetric(7, content, facts({ a: { x: 1, y: 3 }, b: 1 }))).not.toBe(a);
    expect(computeMetric(8, content, facts({ b: 1, a: { y: 2, x: 1 } }))).not.toBe(a);
  });

  it('full method: one metric per task', () => {
    const full = { enable: true, method: 4 as const };
    expect(computeMetric(7, full, facts({ a: 1 }))).toBe(computeMetric(7, full, facts({ b: 2 })));
    expect(computeMetric(7, full, facts({ a: 1 }))).not.toBe(computeMetric(8, full, facts({ a: 1 })));
  });

  it('stableStringify sorts keys deeply and keeps array order', () => {
    expect(stableStringify({ b: [2, { d: 1, c: 0 }], a: 'x' })).toBe('{"a":"x","b":[2,{"c":0,"d":1}]}');
  });
});

/** Runs alarms at the given times through the state machine; returns what each alarm got. */
function run(cfg: StrategyConfig, times: number[]) {
  let w: WindowState | undefined;
  return times.map((now, i) => {
    const step = compressStep(w, { uuid: `u${i + 1}`, now, newBatch: 100 + i + 1 }, cfg);
    w = step.window;
    return { notify: step.notify, k: step.k, batch: step.batch, opened: step.opened };
  });
}

const notifies = (r: { notify: CompressNotify }[]) => r.map((x) => x.notify);

describe('compressStep: the strategies over a window (cycle 60 s, N = 3)', () => {
  const cfg = (strategy: StrategyConfig['strategy']): StrategyConfig => ({
    strategy,
    cycleSeconds: 60,
    count: 3,
  });
  const seven = [0, 1, 2, 3, 4, 5, 6];

  it.each<[string, StrategyConfig['strategy'], CompressNotify[]]>([
    ['1 cycle: k = 1 only', 1, ['now', 'none', 'none', 'none', 'none', 'none', 'none']],
    ['2 delay: the first alarm, deferred', 2, ['deferred', 'none', 'none', 'none', 'none', 'none', 'none']],
    [
      '3 cycle-count: k = 1 and k = N, then a new window',
      3,
      ['now', 'none', 'now', 'now', 'none', 'now', 'now'],
    ],
    ['4 count-cycle: k = N, then a new window', 4, ['none', 'none', 'now', 'none', 'none', 'now', 'none']],
    ['5 count: k = N only', 5, ['none', 'none', 'now', 'none', 'none', 'none', 'none']],
  ])('%s', (_name, strategy, expected) => {
    expect(notifies(run(cfg(strategy), seven))).toEqual(expected);
  });

  it('positions and batches: count strategies start a new window (and batch) after N', () => {
    const r = run(cfg(4), seven);
    expect(r.map((x) => x.k)).toEqual([1, 2, 3, 1, 2, 3, 1]);
    expect(r.map((x) => x.batch)).toEqual([101, 101, 101, 104, 104, 104, 107]);
    expect(r.map((x) => x.opened)).toEqual([true, false, false, true, false, false, true]);
  });

  it('count keeps one window for the whole cycle', () => {
    const r = run(cfg(5), seven);
    expect(r.map((x) => x.k)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(r.map((x) => x.batch))).toEqual(new Set([101]));
  });

  it('a window ends after strategy_cycle: the next alarm opens a new one (fixed, not sliding)', () => {
    const r = run(cfg(1), [0, 30, 59, 60, 61, 119, 120]);
    expect(notifies(r)).toEqual(['now', 'none', 'none', 'now', 'none', 'none', 'now']);
    expect(r.map((x) => x.batch)).toEqual([101, 101, 101, 104, 104, 104, 107]);
  });

  it('count-cycle: a window that ends before N notifies nothing and the count restarts', () => {
    const r = run(cfg(4), [0, 10, 70, 80, 90]);
    expect(notifies(r)).toEqual(['none', 'none', 'none', 'none', 'now']);
    expect(r.map((x) => x.k)).toEqual([1, 2, 1, 2, 3]);
  });

  it('count: the N-th alarm notifies only within the window', () => {
    const r = run(cfg(5), [0, 10, 61, 62, 63]);
    expect(notifies(r)).toEqual(['none', 'none', 'none', 'none', 'now']);
  });

  it('N = 1: cycle-count and count-cycle notify every alarm, each in its own window', () => {
    const one = (s: StrategyConfig['strategy']) => ({ strategy: s, cycleSeconds: 60, count: 1 });
    expect(notifies(run(one(3), [0, 1, 2]))).toEqual(['now', 'now', 'now']);
    expect(notifies(run(one(4), [0, 1, 2]))).toEqual(['now', 'now', 'now']);
    expect(run(one(4), [0, 1, 2]).map((x) => x.batch)).toEqual([101, 102, 103]);
    expect(notifies(run(one(5), [0, 1, 2]))).toEqual(['now', 'none', 'none']);
  });

  it('the opened window records its opener and end', () => {
    const step = compressStep(undefined, { uuid: 'first', now: 1000, newBatch: 9 }, cfg(2));
    expect(step.window).toEqual({ batch: 9, start: 1000, end: 1060, k: 1, opener: 'first', closed: false });
  });
});

describe('strategyOf', () => {
  it('minutes to seconds, count at least 1', () => {
    expect(strategyOf({ enable: true, strategy: 3, strategy_cycle: 5, strategy_count: 4 })).toEqual({
      strategy: 3,
      cycleSeconds: 300,
      count: 4,
    });
    expect(strategyOf({ enable: true, strategy: 1, strategy_cycle: 2 })).toEqual({
      strategy: 1,
      cycleSeconds: 120,
      count: 1,
    });
  });
});
