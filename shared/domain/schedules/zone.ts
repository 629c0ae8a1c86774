/**
 * Local time in IANA time zones, from the runtime's own zone data (`Intl`, full ICU in Node.js 24).
 * Pure: no I/O, no clock. Instants are Unix seconds.
 *
 * A local time that does not exist (the hour skipped when clocks go forward) is read with the offset
 * in force before the gap, which moves it forward by the gap: 02:30 on 2026-03-08 in New York is
 * 03:30 EDT. A local time that occurs twice (the hour repeated when clocks go back) is its first
 * occurrence. Both as RFC 5545 §3.3.5 says.
 */

export interface LocalTime {
  year: number;
  /** 1-12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** ISO weekday: Monday = 1 ... Sunday = 7. */
  weekday: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether the runtime knows `zone` as an IANA time zone. */
export function isTimeZone(zone: string): boolean {
  if (zone.length === 0 || zone.length > 64) return false;
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's UTC offset (seconds, local minus UTC) at instant `t`, asked of Intl. */
function offsetFromIntl(zone: string, t: number): number {
  const p: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(t * 1000))) {
    if (part.type !== 'literal') p[part.type] = Number(part.value);
  }
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) / 1000 - t;
}

/** The offsets of one zone over one UTC year: the instants they change, found once. */
interface YearOffsets {
  /** Ascending: `offset` applies from `at` until the next entry. */
  changes: { at: number; offset: number }[];
}

const years = new Map<string, YearOffsets>();
/** How often a year is sampled for changes (two changes within this span would be missed). */
const SAMPLE_SECONDS = 6 * 3600;

function yearOffsets(zone: string, year: number): YearOffsets {
  const key = `${zone}|${year}`;
  const known = years.get(key);
  if (known) return known;
  const start = Date.UTC(year, 0, 1) / 1000;
  const end = Date.UTC(year + 1, 0, 1) / 1000;
  const changes = [{ at: start, offset: offsetFromIntl(zone, start) }];
  let prev = start;
  for (let t = start + SAMPLE_SECONDS; prev < end; t = Math.min(t + SAMPLE_SECONDS, end)) {
    const o = offsetFromIntl(zone, t);
    if (o !== changes[changes.length - 1].offset) {
      // The change lies in (prev, t]: the first second with the new offset.
      let lo = prev;
      let hi = t;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (offsetFromIntl(zone, mid) === o) hi = mid;
        else lo = mid;
      }
      changes.push({ at: hi, offset: o });
    }
    prev = t;
    if (t === end) break;
  }
  const out = { changes };
  if (years.size > 2_000) years.clear();
  years.set(key, out);
  return out;
}

/** The zone's UTC offset in seconds (local minus UTC) at instant `t`. */
export function offsetAt(zone: string, t: number): number {
  const year = new Date(t * 1000).getUTCFullYear();
  const { changes } = yearOffsets(zone, year);
  let offset = changes[0].offset;
  for (const c of changes) {
    if (c.at > t) break;
    offset = c.offset;
  }
  return offset;
}

/** The local time at instant `t` in `zone`. */
export function localTime(zone: string, t: number): LocalTime {
  const d = new Date((t + offsetAt(zone, t)) * 1000);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    weekday: ((d.getUTCDay() + 6) % 7) + 1,
  };
}

/**
 * The instant of a local time in `zone` (fields may overflow: day 32 is the next month's first, hour
 * 24 the next day's midnight). A skipped local time is moved forward by the gap; a repeated one is
 * its first occurrence.
 */
export function instantOf(
  zone: string,
  year: number,
  month: number,
  day: number,
  hour = 0,
  minute = 0,
): number {
  const local = Date.UTC(year, month - 1, day, hour, minute) / 1000;
  // The local time's instant lies within 14 h of `local`: the offsets well before and after it are
  // those on either side of any change near it.
  const before = offsetAt(zone, local - 30 * 3600);
  const after = offsetAt(zone, local + 30 * 3600);
  const first = local - before;
  if (before === after) return first;
  const second = local - after;
  const firstHolds = offsetAt(zone, first) === before;
  const secondHolds = offsetAt(zone, second) === after;
  if (firstHolds && secondHolds) return Math.min(first, second);
  if (firstHolds) return first;
  if (secondHolds) return second;
  // Neither: the local time falls in the gap; read with the offset before it.
  return first;
}

/** Days since 1970-01-01 of a calendar date (its "local epoch day"). */
export function epochDay(year: number, month: number, day: number): number {
  return Date.UTC(year, month - 1, day) / 86_400_000;
}

/** The calendar date of an epoch day and its ISO weekday. */
export function dateOfEpochDay(day: number): { year: number; month: number; day: number; weekday: number } {
  const d = new Date(day * 86_400_000);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    weekday: ((d.getUTCDay() + 6) % 7) + 1,
  };
}

/** The offset changes of `zone` in [from, to): when, and the offsets either side. */
export function offsetChanges(
  zone: string,
  from: number,
  to: number,
): { at: number; before: number; after: number }[] {
  const out: { at: number; before: number; after: number }[] = [];
  const first = new Date(from * 1000).getUTCFullYear();
  const last = new Date(to * 1000).getUTCFullYear();
  for (let year = first; year <= last; year++) {
    const { changes } = yearOffsets(zone, year);
    for (let i = 1; i < changes.length; i++) {
      const c = changes[i];
      if (c.at >= from && c.at < to) out.push({ at: c.at, before: changes[i - 1].offset, after: c.offset });
    }
  }
  return out;
}
