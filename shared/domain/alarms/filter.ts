import { type AlarmFacts, firstMatch } from '../conditions/evaluate.ts';
import type { FilterConfig } from '../tasks/model.ts';
import type { Level } from '../../contracts/levels.ts';

export const FILTER_WHITELIST = 1;
export const FILTER_BLACKLIST = 2;
/** A filter condition level that keeps the alarm's own level. */
export const LEVEL_INHERIT = 9;

export interface FilterResult {
  /** The alarm goes on through the pipeline. */
  keep: boolean;
  /** The alarm's level after the filter (a matched condition's 0..3 replaces it; 9 keeps it). */
  level: Level;
  /** Index of the matched condition, -1 when none matched (or the filter is off). */
  matched: number;
}

/**
 * The filter stage (API guide §9.3): conditions OR-ed in order, the first match counts. Whitelist
 * keeps on a match and rejects otherwise; blacklist rejects on a match and keeps otherwise.
 */
export function applyFilter(
  filter: FilterConfig | undefined,
  facts: AlarmFacts & { level: Level },
): FilterResult {
  if (!filter?.enable) return { keep: true, level: facts.level, matched: -1 };
  const conditions = filter.conditions ?? [];
  const matched = firstMatch(conditions, facts);
  const keep = filter.mode === FILTER_BLACKLIST ? matched < 0 : matched >= 0;
  const override = matched >= 0 ? conditions[matched].level : LEVEL_INHERIT;
  const level = override >= 0 && override <= 3 ? (override as Level) : facts.level;
  return { keep, level, matched };
}
