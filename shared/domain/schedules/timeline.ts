/**
 * The one computation behind every answer about a schedule (who is on call, the final shifts, the
 * preview, the calendar feed, the gap check, the receivers an alarm resolves to): pure, from the
 * schedule's configuration versions and overrides, for a window of time. Instants are Unix seconds;
 * spans are half-open [start, end).
 *
 * Rules (API guide §18.2):
 * - A layer's turn k (k >= 0) belongs to `users[k mod n]`. Hour turns last exactly `every` hours of
 *   elapsed time from `start`; day and week turns hand off at the same local wall time of `start`
 *   (a skipped local time moved forward by the gap, a repeated one its first occurrence: zone.ts).
 *   Before `start` a layer covers nothing.
 * - `restrictions` clip a layer to windows of local time starting on the given days; the rotation
 *   runs on through the clipped time.
 * - At an instant: the override covering it (the greatest id, i.e. the latest created, where they
 *   overlap); else the topmost layer with a turn active then; else the fallback; else nobody (a gap).
 * - The version in force at an instant is the last one whose `effective_from` is not after it; the
 *   first version answers for all time before that too.
 */
import type { Coverage, Gap, Layer, Override, Restriction, ScheduleVersion, Shift, Source } from './model.ts';
import { DAY_SECONDS } from './model.ts';
import { dateOfEpochDay, epochDay, instantOf, localTime } from './zone.ts';

interface Span {
  start: number;
  end: number;
}

interface Turn extends Span {
  uid: number;
}

const UNIT_SECONDS = { hour: 3600, day: DAY_SECONDS, week: 7 * DAY_SECONDS } as const;

/** `YYYY-MM-DDTHH:MM` */
function parseLocal(text: string): {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
} {
  const [date, time] = text.split('T');
  const [year, month, day] = date.split('-').map(Number);
  const [hour, minute] = time.split(':').map(Number);
  return { year, month, day, hour, minute };
}

/** `HH:MM` as minutes of the day (`24:00` is 1440). */
export function minutesOf(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number);
  return h * 60 + m;
}

/** When turn k of a layer begins. */
function turnStart(layer: Layer, zone: string, k: number): number {
  const s = parseLocal(layer.start);
  if (layer.turn.unit === 'hour')
    return instantOf(zone, s.year, s.month, s.day, s.hour, s.minute) + k * layer.turn.every * 3600;
  const days = k * layer.turn.every * (layer.turn.unit === 'week' ? 7 : 1);
  return instantOf(zone, s.year, s.month, s.day + days, s.hour, s.minute);
}

/** The turns of a layer that overlap [from, to), whole. */
function turnsOf(layer: Layer, zone: string, from: number, to: number): Turn[] {
  const first = turnStart(layer, zone, 0);
  if (to <= first || layer.users.length === 0) return [];
  const period = layer.turn.every * UNIT_SECONDS[layer.turn.unit];
  let k = Math.max(0, Math.floor((Math.max(from, first) - first) / period));
  // Local hand-offs drift from the elapsed-time estimate by the zone's offset changes: step to the turn.
  while (k > 0 && turnStart(layer, zone, k) > from) k--;
  while (turnStart(layer, zone, k + 1) <= from) k++;
  const out: Turn[] = [];
  let start = turnStart(layer, zone, k);
  while (start < to) {
    const end = turnStart(layer, zone, k + 1);
    out.push({ start, end, uid: layer.users[k % layer.users.length] });
    k++;
    start = end;
  }
  return out;
}

/**
 * The windows of local time the restrictions describe that overlap [from, to), sorted and merged:
 * each starts at `from` on a listed weekday and ends at `to` that day (or the next, when `to` is not
 * after `from`; `24:00` is the end of the day).
 */
export function restrictionWindows(
  restrictions: Restriction[],
  zone: string,
  from: number,
  to: number,
): Span[] {
  const a = localTime(zone, from);
  const b = localTime(zone, to);
  const firstDay = epochDay(a.year, a.month, a.day) - 1;
  const lastDay = epochDay(b.year, b.month, b.day);
  const windows: Span[] = [];
  for (let d = firstDay; d <= lastDay; d++) {
    const date = dateOfEpochDay(d);
    for (const r of restrictions) {
      if (!r.days.includes(date.weekday)) continue;
      const fromMin = minutesOf(r.from);
      const toMin = minutesOf(r.to);
      const start = instantOf(zone, date.year, date.month, date.day, 0, fromMin);
      const end = instantOf(zone, date.year, date.month, date.day + (toMin <= fromMin ? 1 : 0), 0, toMin);
      if (end > start && end > from && start < to) windows.push({ start, end });
    }
  }
  windows.sort((x, y) => x.start - y.start);
  const merged: Span[] = [];
  for (const w of windows) {
    const last = merged[merged.length - 1];
    if (last && w.start <= last.end) last.end = Math.max(last.end, w.end);
    else merged.push({ ...w });
  }
  return merged;
}

/** Where a layer is on call within [from, to): its turns, clipped to the window and its restrictions. */
function layerCover(layer: Layer, zone: string, from: number, to: number): Turn[] {
  const turns = turnsOf(layer, zone, from, to)
    .map((t) => ({ ...t, start: Math.max(t.start, from), end: Math.min(t.end, to) }))
    .filter((t) => t.end > t.start);
  if (!layer.restrictions?.length) return turns;
  const windows = restrictionWindows(layer.restrictions, zone, from, to);
  const out: Turn[] = [];
  let w = 0;
  for (const t of turns) {
    while (w < windows.length && windows[w].end <= t.start) w++;
    for (let i = w; i < windows.length && windows[i].start < t.end; i++) {
      const start = Math.max(t.start, windows[i].start);
      const end = Math.min(t.end, windows[i].end);
      if (end > start) out.push({ start, end, uid: t.uid });
    }
  }
  return out;
}

/** Versions by the order they take effect (a later version of the same instant wins). */
function ordered(versions: ScheduleVersion[]): ScheduleVersion[] {
  return [...versions].sort((x, y) => x.effective_from - y.effective_from || x.version - y.version);
}

/** The spans of [from, to) each version is in force for (the first answers for all time before it). */
export function versionSpans(
  versions: ScheduleVersion[],
  from: number,
  to: number,
): { version: ScheduleVersion; start: number; end: number }[] {
  const list = ordered(versions);
  const out: { version: ScheduleVersion; start: number; end: number }[] = [];
  list.forEach((v, i) => {
    const start = Math.max(from, i === 0 ? -Infinity : v.effective_from);
    const end = Math.min(to, i + 1 < list.length ? list[i + 1].effective_from : Infinity);
    if (end > start) out.push({ version: v, start, end });
  });
  return out;
}

const sameUids = (a: number[], b: number[]) => a.length === b.length && a.every((u, i) => u === b[i]);
const sameSource = (a: Source, b: Source) =>
  a.kind === b.kind && a.layer === b.layer && a.name === b.name && a.override === b.override;

/** The answer over one version's span: elementary shifts, not yet merged. */
function spanShifts(v: ScheduleVersion, overrides: Override[], from: number, to: number): Shift[] {
  const covers = v.layers.map((l) => layerCover(l, l.time_zone ?? v.time_zone, from, to));
  const active = overrides.filter((o) => o.end > from && o.start < to);
  const points = new Set<number>([from, to]);
  for (const c of covers) for (const t of c) points.add(t.start).add(t.end);
  for (const o of active) points.add(Math.max(o.start, from)).add(Math.min(o.end, to));
  const cuts = [...points].sort((x, y) => x - y);
  const next = covers.map(() => 0);
  const out: Shift[] = [];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const start = cuts[i];
    const end = cuts[i + 1];
    let override: Override | undefined;
    for (const o of active)
      if (o.start <= start && start < o.end && (!override || o.id > override.id)) override = o;
    if (override) {
      out.push({ start, end, uids: [override.user], source: { kind: 'override', override: override.id } });
      continue;
    }
    let found: Shift | undefined;
    for (let l = covers.length - 1; l >= 0 && !found; l--) {
      const c = covers[l];
      while (next[l] < c.length && c[next[l]].end <= start) next[l]++;
      const t = c[next[l]];
      if (t && t.start <= start) {
        found = { start, end, uids: [t.uid], source: { kind: 'layer', layer: l, name: v.layers[l].name } };
      }
    }
    if (found) out.push(found);
    else if (v.fallback?.length)
      out.push({ start, end, uids: [...v.fallback], source: { kind: 'fallback' } });
    else out.push({ start, end, uids: [], source: { kind: 'none' } });
  }
  return out;
}

/** Adjacent shifts with the same people and source as one. */
function merge(shifts: Shift[]): Shift[] {
  const out: Shift[] = [];
  for (const s of shifts) {
    const last = out[out.length - 1];
    if (last && last.end === s.start && sameUids(last.uids, s.uids) && sameSource(last.source, s.source))
      last.end = s.end;
    else out.push({ ...s, uids: [...s.uids], source: { ...s.source } });
  }
  return out;
}

/**
 * Every answer over [from, to): consecutive shifts covering the window exactly, adjacent equal ones
 * merged; a shift with nobody (`source.kind` none) is a gap. No versions: one gap.
 */
export function timeline(
  versions: ScheduleVersion[],
  overrides: Override[],
  from: number,
  to: number,
): Shift[] {
  if (to <= from) return [];
  const spans = versionSpans(versions, from, to);
  if (spans.length === 0) return [{ start: from, end: to, uids: [], source: { kind: 'none' } }];
  return merge(spans.flatMap((s) => spanShifts(s.version, overrides, s.start, s.end)));
}

/** The gaps of a timeline. */
export const gapsOf = (shifts: Shift[]): Gap[] =>
  shifts.filter((s) => s.source.kind === 'none').map((s) => ({ start: s.start, end: s.end }));

/** The share of [from, to) someone is on call, in percent with two decimals. */
export function coveragePct(shifts: Shift[], from: number, to: number): number {
  if (to <= from) return 0;
  const covered = shifts.filter((s) => s.source.kind !== 'none').reduce((n, s) => n + (s.end - s.start), 0);
  return Math.round((covered / (to - from)) * 10_000) / 100;
}

/** The longest stretch either side of an instant the shift containing it is looked for. */
const MAX_REACH = 90 * DAY_SECONDS;

/**
 * Who is on call at `at`, with the whole shift it falls in (the merged span of the same answer),
 * looked for up to 90 days either side (a longer shift is cut there).
 */
export function answerAt(versions: ScheduleVersion[], overrides: Override[], at: number): Shift {
  for (let reach = DAY_SECONDS; ; reach *= 2) {
    const r = Math.min(reach, MAX_REACH);
    const shifts = timeline(versions, overrides, at - r, at + r);
    const s = shifts.find((x) => x.start <= at && at < x.end) as Shift;
    if ((s.start > at - r && s.end < at + r) || r === MAX_REACH) return s;
  }
}

/** A gap the coverage rules say must be reported, and the task it goes to. */
export interface CoverageGap extends Gap {
  alarm_task_id: number;
}

/**
 * The gaps of [from, to) inside the required windows of the version in force (a version without
 * coverage reports none; without `required`, all the time is required), adjacent ones of the same
 * task merged.
 */
export function coverageGaps(
  versions: ScheduleVersion[],
  overrides: Override[],
  from: number,
  to: number,
): CoverageGap[] {
  const out: CoverageGap[] = [];
  for (const span of versionSpans(versions, from, to)) {
    const c: Coverage | undefined = span.version.coverage;
    if (!c) continue;
    const gaps = gapsOf(timeline([span.version], overrides, span.start, span.end));
    const required = c.required?.length
      ? restrictionWindows(c.required, span.version.time_zone, span.start, span.end)
      : [{ start: span.start, end: span.end }];
    for (const g of gaps) {
      for (const w of required) {
        const start = Math.max(g.start, w.start, span.start);
        const end = Math.min(g.end, w.end, span.end);
        if (end <= start) continue;
        const last = out[out.length - 1];
        if (last && last.end === start && last.alarm_task_id === c.alarm_task_id) last.end = end;
        else out.push({ start, end, alarm_task_id: c.alarm_task_id });
      }
    }
  }
  return out;
}

/**
 * What a change of configuration changes over [from, to): the spans where the answers differ, with
 * both answers (the timelines cut at each other's boundaries and compared piece by piece).
 */
export function changesBetween(
  before: Shift[],
  after: Shift[],
): { start: number; end: number; before: Shift; after: Shift }[] {
  const out: { start: number; end: number; before: Shift; after: Shift }[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length && j < after.length) {
    const b = before[i];
    const a = after[j];
    const start = Math.max(b.start, a.start);
    const end = Math.min(b.end, a.end);
    if (end > start && !(sameUids(a.uids, b.uids) && sameSource(a.source, b.source))) {
      const last = out[out.length - 1];
      if (last && last.end === start && last.before === b && last.after === a) last.end = end;
      else out.push({ start, end, before: b, after: a });
    }
    if (b.end <= a.end) i++;
    else j++;
  }
  return out;
}
