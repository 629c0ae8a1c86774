import type { UpgradeConfig, UpgradeStrategy } from '../tasks/model.ts';

/**
 * The upgrade stage (API guide §9.5), pure. Alarms of a metric are counted in minute buckets; a
 * strategy fires when the count of the trailing `interval` minutes reaches its `count`, at most once
 * per strategy per metric per `interval`.
 *
 * Granularity: a bucket counts when any part of its minute lies in the trailing interval, so alarms
 * up to 59 s older than the interval may count (an upgrade errs on the side of firing).
 */
export interface UpgradeFire {
  /** Identifies the strategy: `<index>.<interval>.<count>`. */
  key: string;
  index: number;
  /** The count that reached the strategy's `count` (`context.zcount`). */
  zcount: number;
}

export const strategyKey = (s: UpgradeStrategy, index: number) => `${index}.${s.interval}.${s.count}`;

export function upgradeStrategies(upgrade: UpgradeConfig | undefined): UpgradeStrategy[] {
  return upgrade?.enable ? (upgrade.strategies ?? []).filter((s) => s.interval > 0 && s.count > 0) : [];
}

/** The longest interval, minutes (0 when upgrade is off). */
export function maxInterval(strategies: UpgradeStrategy[]): number {
  return strategies.reduce((m, s) => Math.max(m, s.interval), 0);
}

export const minuteOf = (t: number) => Math.floor(t / 60);

/** The first minute bucket that overlaps the trailing interval ending at `now`. */
export const firstBucket = (now: number, intervalMinutes: number) => minuteOf(now - intervalMinutes * 60);

/** Alarms in the trailing interval, from minute buckets (minute -> count). */
export function trailingCount(buckets: Map<number, number>, now: number, intervalMinutes: number): number {
  const from = firstBucket(now, intervalMinutes);
  const to = minuteOf(now);
  let sum = 0;
  for (const [m, n] of buckets) if (m >= from && m <= to) sum += n;
  return sum;
}

/**
 * One alarm through the upgrade rules. `buckets` already count this alarm; `fired` maps a strategy
 * key to when it last fired. Returns the strategies that fire, the updated `fired` map and each
 * strategy's trailing count.
 */
export function upgradeStep(
  strategies: UpgradeStrategy[],
  buckets: Map<number, number>,
  fired: Record<string, number>,
  now: number,
): { fires: UpgradeFire[]; fired: Record<string, number>; counts: number[] } {
  const next = { ...fired };
  const fires: UpgradeFire[] = [];
  const counts: number[] = [];
  strategies.forEach((s, index) => {
    const key = strategyKey(s, index);
    const count = trailingCount(buckets, now, s.interval);
    counts.push(count);
    const last = next[key];
    if (count >= s.count && (last === undefined || now - last >= s.interval * 60)) {
      next[key] = now;
      fires.push({ key, index, zcount: count });
    }
  });
  return { fires, fired: next, counts };
}
