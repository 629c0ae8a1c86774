import { stableStringify } from '../../json.ts';
import { createHash } from 'node:crypto';
import { type AlarmFacts, firstMatch, ruleToken } from '../conditions/evaluate.ts';
import type { CompressConfig } from '../tasks/model.ts';

/**
 * The compression stage (API guide §9.4), pure: the metric an alarm groups under, and the window state
 * machine of the five strategies.
 */
export const METHOD_CONDITION = 1;
export const METHOD_CONTENT = 3;
export const METHOD_FULL = 4;

export const STRATEGY_CYCLE = 1;
export const STRATEGY_DELAY = 2;
export const STRATEGY_CYCLE_COUNT = 3;
export const STRATEGY_COUNT_CYCLE = 4;
export const STRATEGY_COUNT = 5;

const sha1 = (text: string) => createHash('sha1').update(text, 'utf8').digest('hex');

/**
 * The metric (40-hex SHA-1) of an alarm, or undefined when the condition method matches nothing.
 * - condition: the first matching condition's rules as `field#operator#threshold` tokens (`eq-self`
 *   takes the actual value), sorted, joined by `@`, prefixed with `<task id>#`;
 * - content: `<task id>#` + the content serialized with keys sorted (deep);
 * - full: the task id.
 */
export function computeMetric(
  taskId: number,
  compress: CompressConfig,
  facts: AlarmFacts,
): string | undefined {
  switch (compress.method) {
    case METHOD_CONDITION: {
      const conditions = compress.conditions ?? [];
      const i = firstMatch(conditions, facts);
      if (i < 0) return undefined;
      const tokens = conditions[i].rule.map((r) => ruleToken(r, facts)).sort();
      return sha1(`${taskId}#${tokens.join('@')}`);
    }
    case METHOD_CONTENT:
      return sha1(`${taskId}#${stableStringify(facts.ctn)}`);
    case METHOD_FULL:
      return sha1(String(taskId));
    default:
      return undefined;
  }
}

/** A compression window of one metric: fixed (not sliding), opened by its first alarm. */
export interface WindowState {
  /** Positive integer batch id of the window (the history id of the alarm that opened it). */
  batch: number;
  /** Unix seconds the window opened and ends (start + strategy_cycle minutes). */
  start: number;
  end: number;
  /** Alarms counted in the window so far. */
  k: number;
  /** uuid of the alarm that opened it. */
  opener: string;
  /** Closed by its count (cycle-count, count-cycle): the next alarm opens a new window. */
  closed: boolean;
}

export interface StrategyConfig {
  strategy: 1 | 2 | 3 | 4 | 5;
  cycleSeconds: number;
  /** N, at least 1. */
  count: number;
}

export function strategyOf(compress: CompressConfig): StrategyConfig {
  return {
    strategy: compress.strategy ?? STRATEGY_CYCLE,
    cycleSeconds: Math.max(1, compress.strategy_cycle ?? 1) * 60,
    count: Math.max(1, compress.strategy_count ?? 1),
  };
}

/**
 * `now`: notify inline; `deferred`: the window's first alarm of the delay strategy, notified once
 * when its window ends; `none`: compressed away (stored only).
 */
export type CompressNotify = 'now' | 'deferred' | 'none';

export interface CompressStep {
  window: WindowState;
  /** The alarm's position in its window. */
  k: number;
  batch: number;
  notify: CompressNotify;
  /** This alarm opened a new window. */
  opened: boolean;
}

export function windowOpen(w: WindowState | undefined, now: number): w is WindowState {
  return !!w && !w.closed && now < w.end;
}

/**
 * One alarm through the window state machine. `newBatch` is the batch id to use if this alarm opens
 * a window. With k = the alarm's position and N = strategy_count:
 * 1 cycle: notify k = 1; 2 delay: nothing inline, the first alarm is notified when the window ends;
 * 3 cycle-count: notify k = 1, and at k = N notify and close the window;
 * 4 count-cycle: at k = N notify and close the window; 5 count: notify k = N only.
 * A window also ends after strategy_cycle minutes; the next alarm then opens a new one.
 */
export function compressStep(
  window: WindowState | undefined,
  alarm: { uuid: string; now: number; newBatch: number },
  cfg: StrategyConfig,
): CompressStep {
  const opened = !windowOpen(window, alarm.now);
  const current: WindowState = opened
    ? {
        batch: alarm.newBatch,
        start: alarm.now,
        end: alarm.now + cfg.cycleSeconds,
        k: 0,
        opener: alarm.uuid,
        closed: false,
      }
    : { ...(window as WindowState) };
  const k = current.k + 1;
  const n = cfg.count;
  let notify: CompressNotify = 'none';
  let closed = false;
  switch (cfg.strategy) {
    case STRATEGY_CYCLE:
      notify = k === 1 ? 'now' : 'none';
      break;
    case STRATEGY_DELAY:
      notify = k === 1 ? 'deferred' : 'none';
      break;
    case STRATEGY_CYCLE_COUNT:
      notify = k === 1 || k === n ? 'now' : 'none';
      closed = k >= n;
      break;
    case STRATEGY_COUNT_CYCLE:
      notify = k === n ? 'now' : 'none';
      closed = k >= n;
      break;
    case STRATEGY_COUNT:
      notify = k === n ? 'now' : 'none';
      break;
  }
  return { window: { ...current, k, closed }, k, batch: current.batch, notify, opened };
}
