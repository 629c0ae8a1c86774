/**
 * The schedule API's answers about time (API guide §18.3): who is on call at an instant, the final
 * shifts of a window, the preview of an unsaved configuration, the calendar feed. Every one of them
 * is computed by timeline.ts from the stored versions and overrides.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { summaryPerson } from '../directory/model.ts';
import { UnauthorizedError } from '../errors.ts';
import { scheduleFor } from './access.ts';
import { renderCalendar } from './ical.ts';
import { DAY_SECONDS, MAX_WINDOW_DAYS, type Override, type ScheduleVersion, type Shift } from './model.ts';
import type { FinalShifts, IcalKey, OncallNow, SchedulePreview } from './responses.ts';
import { checkWindow, parseConfig } from './rules.ts';
import { checkReferences, scheduleDeps, type ScheduleDeps } from './service.ts';
import { answerAt, changesBetween, coveragePct, gapsOf, timeline, versionSpans } from './timeline.ts';

// biome-ignore lint/suspicious/noExplicitAny: the request body, validated by the route's schema and rules.ts
type Body = Record<string, any>;

/** How far back from an instant the shift containing it is looked for (timeline.ts answerAt). */
export const REACH_SECONDS = MAX_WINDOW_DAYS * DAY_SECONDS;

export interface TimelineData {
  versions: ScheduleVersion[];
  overrides: Override[];
}

/** What answers about instants from `from` on need: the versions in force then and after, the overrides. */
export async function loadTimeline(
  id: number,
  from: number,
  deps: ScheduleDeps = scheduleDeps,
): Promise<TimelineData> {
  const [versions, overrides] = await Promise.all([
    deps.repo.getVersionsFrom(id, from),
    deps.repo.getOverridesEndingAfter(id, from),
  ]);
  return { versions, overrides };
}

const shiftView = (s: Shift) => ({ start: s.start, end: s.end, uids: s.uids, source: s.source });

/** The final shifts of a window, with the people they name. */
async function finalOf(
  data: TimelineData,
  from: number,
  to: number,
  deps: ScheduleDeps,
): Promise<FinalShifts> {
  const shifts = timeline(data.versions, data.overrides, from, to);
  const uids = [...new Set(shifts.flatMap((s) => s.uids))];
  const people = uids.length ? (await deps.getUsers(uids)).map(summaryPerson) : [];
  return {
    from,
    to,
    shifts: shifts.map(shiftView),
    gaps: gapsOf(shifts),
    coverage_pct: coveragePct(shifts, from, to),
    people,
  };
}

/** GET /schedule/oncall: who is on call at `at` (default now), why, and the shift it falls in. */
export async function oncallAt(
  input: { uid: number; id: number; at?: number },
  deps: ScheduleDeps = scheduleDeps,
): Promise<OncallNow> {
  const s = await scheduleFor(input.uid, input.id, 'read', deps);
  const at = input.at ?? deps.now();
  const data = await loadTimeline(s.id, at - REACH_SECONDS, deps);
  const shift = answerAt(data.versions, data.overrides, at);
  const users = new Map((await deps.getUsers(shift.uids)).map((u) => [u.uid, summaryPerson(u)]));
  return {
    at,
    users: shift.uids.map((uid) => users.get(uid) ?? { uid, username: '', email: '', department: '' }),
    source: shift.source,
    shift: { start: shift.start, end: shift.end },
  };
}

/** GET /schedule/final: the shifts of any window of at most 90 days, past or future. */
export async function finalShifts(
  input: { uid: number; id: number; from: number; to: number },
  deps: ScheduleDeps = scheduleDeps,
): Promise<FinalShifts> {
  checkWindow(input.from, input.to);
  const s = await scheduleFor(input.uid, input.id, 'read', deps);
  return finalOf(await loadTimeline(s.id, input.from, deps), input.from, input.to, deps);
}

/**
 * POST /schedule/preview: `final` as it would be once the configuration is saved (taking effect from
 * now or a later `effective_from`, as PUT /schedule/update would), and the spans where it differs
 * from the saved schedule (`id`; a new schedule's configuration answers for all time, so nothing to
 * differ from).
 */
export async function previewSchedule(
  body: Body,
  deps: ScheduleDeps = scheduleDeps,
): Promise<SchedulePreview> {
  checkWindow(body.from, body.to);
  await deps.loadReader(body.uid);
  const config = parseConfig(body);
  await checkReferences(config, body, deps);
  const now = deps.now();
  if (body.id === undefined) {
    const first: ScheduleVersion = {
      ...config,
      version: 1,
      effective_from: now,
      created_at: now,
      created_by: body.uid,
    };
    const preview = await finalOf({ versions: [first], overrides: [] }, body.from, body.to, deps);
    return { ...preview, effective_from: now, changes: [] };
  }
  const s = await scheduleFor(body.uid, body.id, 'read', deps);
  const effective = Math.max(now, body.effective_from ?? now);
  const saved = await loadTimeline(s.id, Math.min(body.from, now), deps);
  const next: ScheduleVersion = {
    ...config,
    version: s.version + 1,
    effective_from: effective,
    created_at: now,
    created_by: body.uid,
  };
  // As the update would: pending configurations due at or after this one are replaced by it.
  const kept = saved.versions.filter((v) => !(v.effective_from > now && v.effective_from >= effective));
  const after = { versions: [...kept, next], overrides: saved.overrides };
  const before = timeline(saved.versions, saved.overrides, body.from, body.to);
  const preview = await finalOf(after, body.from, body.to, deps);
  const changes = changesBetween(before, timeline(after.versions, after.overrides, body.from, body.to)).map(
    (c) => ({
      start: c.start,
      end: c.end,
      before: { uids: c.before.uids, source: c.before.source },
      after: { uids: c.after.uids, source: c.after.source },
    }),
  );
  return { ...preview, effective_from: effective, changes };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * PUT /schedule/ical: a new calendar feed key (shown this once; only its SHA-256 is kept, and it
 * replaces the one before, which stops working), or with `revoke` none at all.
 */
export async function issueIcalKey(
  input: { uid: number; id: number; revoke?: boolean },
  deps: ScheduleDeps = scheduleDeps,
): Promise<IcalKey> {
  const s = await scheduleFor(input.uid, input.id, 'write', deps);
  if (input.revoke) {
    await deps.repo.setIcalHash(s.id, undefined);
    return { id: s.id };
  }
  const key = randomBytes(20).toString('hex');
  await deps.repo.setIcalHash(s.id, sha256(key));
  return { id: s.id, key, feed: `/schedule/ical.ics?id=${s.id}&key=${key}` };
}

/** The feed's window: from the start of today (UTC) for 90 days. */
export function feedWindow(now: number): { from: number; to: number } {
  const from = Math.floor(now / DAY_SECONDS) * DAY_SECONDS;
  return { from, to: from + MAX_WINDOW_DAYS * DAY_SECONDS };
}

/**
 * GET /schedule/ical.ics: the calendar of the final shifts, authenticated by the feed key alone
 * (calendar clients cannot sign requests). An unknown schedule and a wrong key are the same 401.
 */
export async function icalFeed(
  input: { id: number; key: string },
  deps: ScheduleDeps = scheduleDeps,
): Promise<{ name: string; calendar: string }> {
  const s = await deps.getSchedule(input.id, true);
  const given = Buffer.from(sha256(input.key), 'hex');
  const kept = s?.ical_hash ? Buffer.from(s.ical_hash, 'hex') : undefined;
  if (!s || !kept || kept.length !== given.length || !timingSafeEqual(kept, given))
    throw new UnauthorizedError('calendar key invalid');
  const now = deps.now();
  const { from, to } = feedWindow(now);
  const data = await loadTimeline(s.id, from, deps);
  const shifts = timeline(data.versions, data.overrides, from, to);
  const users = await deps.getUsers([...new Set(shifts.flatMap((x) => x.uids))]);
  const spans = versionSpans(data.versions, from, to);
  const zoneAt = (t: number) => (spans.find((v) => v.start <= t && t < v.end) ?? spans[0]).version.time_zone;
  const calendar = renderCalendar({
    schedule: { id: s.id, name: s.name },
    shifts,
    zoneAt,
    names: new Map(users.map((u) => [u.uid, u.username])),
    from,
    to,
    now,
  });
  return { name: s.name, calendar };
}
