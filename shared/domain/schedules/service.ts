/**
 * Use cases of the schedule API (API guide §18): create, show, edit, delete, list, overrides. Each
 * takes a `deps` object defaulting to the real adapters. Answers about time are in answers.ts.
 */
import { nowSeconds } from '../../clock.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import { summaryPerson } from '../directory/model.ts';
import { loadReader, normPermission } from '../directory/readers.ts';
import * as directory from '../directory/repository.ts';
import { putDue } from '../due/repository.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { accessOf, scheduleFor } from './access.ts';
import {
  COVERAGE_CHECK_KIND,
  DAY_SECONDS,
  type Override,
  type Schedule,
  type ScheduleConfig,
  type ScheduleVersion,
} from './model.ts';
import * as repo from './repository.ts';
import type {
  OverrideEnded,
  OverrideSaved,
  ScheduleDeleted,
  ScheduleList,
  ScheduleShown,
  ScheduleSummary,
} from './responses.ts';
import { configUids, parseConfig } from './rules.ts';

// biome-ignore lint/suspicious/noExplicitAny: request bodies, validated by the route's schema and rules.ts
type Body = Record<string, any>;

export const scheduleDeps = {
  now: nowSeconds,
  loadReader,
  getSchedule: repo.getSchedule,
  getUsers: directory.getUsers,
  getDepartment: directory.getDepartment,
  taskExists: repo.taskExists,
  putDue,
  repo,
};
export type ScheduleDeps = typeof scheduleDeps;

/** Attempts of an edit that lost a race to another before a 409. */
const MAX_ATTEMPTS = 5;
/** The longest override (days). */
const MAX_OVERRIDE_DAYS = 366;

/**
 * 404 for any user, department or task a schedule names that does not exist (a preview names no
 * department).
 */
export async function checkReferences(config: ScheduleConfig, body: Body, deps: ScheduleDeps): Promise<void> {
  const uids = [
    ...new Set([...configUids(config), ...(body.permission?.rw ?? []), ...(body.permission?.ro ?? [])]),
  ];
  const [users, department, task] = await Promise.all([
    deps.getUsers(uids),
    body.department_id === undefined ? Promise.resolve(true) : deps.getDepartment(body.department_id),
    config.coverage ? deps.taskExists(config.coverage.alarm_task_id) : Promise.resolve(true),
  ]);
  const found = new Set(users.map((u) => u.uid));
  const missing = uids.filter((u) => !found.has(u));
  if (missing.length) throw new NotFoundError(`user [${missing.join(', ')}] not found`);
  if (!department) throw new NotFoundError(`department [${body.department_id}] not found`);
  if (!task) throw new NotFoundError(`task [${config.coverage?.alarm_task_id}] not found`);
}

/**
 * Coverage gaps are checked when a schedule changes (now, by the next scheduled run) and every hour:
 * the hourly check's items fall on whole hours, so asking for it again changes nothing.
 */
async function requestCoverageCheck(id: number, now: number, hourly: boolean, deps: ScheduleDeps) {
  await deps.putDue({
    kind: COVERAGE_CHECK_KIND,
    ref: String(id),
    due_at: now,
    payload: { schedule_id: id },
  });
  if (hourly) {
    const hour = Math.floor(now / 3600) * 3600 + 3600;
    await deps.putDue({
      kind: COVERAGE_CHECK_KIND,
      ref: `${id}:hourly`,
      due_at: hour,
      payload: { schedule_id: id, hourly: true },
    });
  }
}

/** The version in force at `at` (the first one before any took effect). */
export function versionAt(versions: ScheduleVersion[], at: number): ScheduleVersion {
  const ordered = [...versions].sort((a, b) => a.effective_from - b.effective_from || a.version - b.version);
  let current = ordered[0];
  for (const v of ordered) if (v.effective_from <= at) current = v;
  return current;
}

async function shown(s: Schedule, deps: ScheduleDeps): Promise<ScheduleShown> {
  const now = deps.now();
  const [versions, overrides, department] = await Promise.all([
    deps.repo.getVersionsFrom(s.id),
    deps.repo.getOverridesEndingAfter(s.id, now),
    deps.getDepartment(s.department_id),
  ]);
  const users = new Map(
    (await deps.getUsers([...s.permission.rw, ...s.permission.ro])).map((u) => [u.uid, summaryPerson(u)]),
  );
  const people = (uids: number[]) => uids.flatMap((u) => users.get(u) ?? []);
  const v = versionAt(versions, now);
  return {
    schedule: {
      id: s.id,
      name: s.name,
      department_id: s.department_id,
      department: department ? { id: department.id, name: department.name } : null,
      permission: { rw: people(s.permission.rw), ro: people(s.permission.ro) },
      version: v.version,
      effective_from: v.effective_from,
      time_zone: v.time_zone,
      layers: v.layers,
      fallback: v.fallback ?? [],
      coverage: v.coverage ?? null,
      versions: versions.map((x) => ({
        version: x.version,
        effective_from: x.effective_from,
        created_at: x.created_at,
        created_by: x.created_by,
      })),
      overrides,
      tasks: s.ref_count,
      ical: s.ical_hash !== undefined,
      created_by: s.created_by,
      created_at: s.created_at,
      updated_at: s.updated_at,
    },
  };
}

/** POST /schedule/store: a new schedule; its first configuration answers for all time. */
export async function storeSchedule(body: Body, deps: ScheduleDeps = scheduleDeps): Promise<ScheduleShown> {
  await deps.loadReader(body.uid);
  const config = parseConfig(body);
  await checkReferences(config, body, deps);
  const now = deps.now();
  const schedule: Schedule = {
    id: await deps.repo.allocateScheduleId(),
    name: body.name,
    department_id: body.department_id,
    permission: normPermission(body.permission, body.uid),
    created_by: body.uid,
    created_at: now,
    updated_at: now,
    version: 1,
    ref_count: 0,
  };
  await deps.repo.createScheduleItems(schedule, {
    ...config,
    version: 1,
    effective_from: now,
    created_at: now,
    created_by: body.uid,
  });
  await requestCoverageCheck(schedule.id, now, config.coverage !== undefined, deps);
  return shown(schedule, deps);
}

/**
 * PUT /schedule/update: the whole schedule again. Its configuration takes effect from now, or from a
 * later `effective_from` (then it replaces any pending configuration due at or after that); answers
 * about earlier instants keep the configuration that was in force then.
 */
export async function updateSchedule(body: Body, deps: ScheduleDeps = scheduleDeps): Promise<ScheduleShown> {
  let current = await scheduleFor(body.uid, body.id, 'write', deps);
  const config = parseConfig(body);
  await checkReferences(config, body, deps);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (attempt > 0) current = await scheduleFor(body.uid, body.id, 'write', deps);
    const now = deps.now();
    const effective = body.effective_from ?? now;
    if (effective < now) throw ValidationError.of('effective_from', 'must not be in the past');
    const pending = (await deps.repo.getVersionsFrom(current.id, now)).filter(
      (v) => v.effective_from > now && v.effective_from >= effective,
    );
    const next: Schedule = {
      ...current,
      name: body.name,
      department_id: body.department_id,
      permission: normPermission(body.permission, current.created_by),
      updated_at: Math.max(now, current.updated_at),
      version: current.version + 1,
    };
    const version: ScheduleVersion = {
      ...config,
      version: next.version,
      effective_from: effective,
      created_at: now,
      created_by: body.uid,
    };
    if (await deps.repo.saveEdit(current, next, version, pending)) {
      await requestCoverageCheck(current.id, now, config.coverage !== undefined, deps);
      return shown(next, deps);
    }
  }
  throw new ConflictError(`schedule [${body.id}] was changed concurrently, please retry`);
}

/** GET /schedule/show */
export async function showSchedule(
  input: { uid: number; id: number },
  deps: ScheduleDeps = scheduleDeps,
): Promise<ScheduleShown> {
  return shown(await scheduleFor(input.uid, input.id, 'read', deps), deps);
}

async function namedBy(id: number, deps: ScheduleDeps): Promise<ConflictError> {
  const tasks = await deps.repo.taskRefsOf(id, 10);
  return new ConflictError(
    `schedule [${id}] is named by task [${tasks.join(', ')}]: remove it from their receivers first`,
  );
}

/** DELETE /schedule: 409 while a task's receivers name it. */
export async function deleteSchedule(
  input: { uid: number; id: number },
  deps: ScheduleDeps = scheduleDeps,
): Promise<ScheduleDeleted> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const s = await scheduleFor(input.uid, input.id, 'write', deps);
    if (s.ref_count > 0) throw await namedBy(s.id, deps);
    if (await deps.repo.deleteScheduleItems(s)) {
      // Gaps it had raised are recovered by the check (it finds the schedule gone).
      await requestCoverageCheck(s.id, deps.now(), false, deps);
      return { id: s.id };
    }
  }
  throw new ConflictError(`schedule [${input.id}] was changed concurrently, please retry`);
}

interface ListCursor {
  n: string;
  id: number;
}

const isListCursor = (v: unknown): v is ListCursor => {
  const c = v as ListCursor;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.n === 'string' &&
    c.n.length <= 200 &&
    Number.isSafeInteger(c.id) &&
    c.id > 0 &&
    c.n.endsWith(`#${String(c.id).padStart(12, '0')}`)
  );
};

/** GET /schedule/list: the schedules the acting user may read (role 9: all), by name. */
export async function listSchedules(
  input: { uid: number; limit?: number; cursor?: string },
  deps: ScheduleDeps = scheduleDeps,
): Promise<ScheduleList> {
  const reader = await deps.loadReader(input.uid);
  const limit = input.limit ?? 50;
  const start = input.cursor ? decodeCursor(input.cursor, isListCursor) : undefined;
  let after: Record<string, unknown> | undefined = start && {
    pk: `SCHEDULE#${start.id}`,
    sk: 'SCHEDULE',
    gsi1pk: 'SCHEDULES',
    gsi1sk: start.n,
  };
  const schedules: ScheduleSummary[] = [];
  let last: ListCursor | undefined;
  do {
    const page = await deps.repo.listSchedulesPage(limit, after);
    for (const s of page.schedules) {
      last = { n: `${s.name.toLowerCase()}#${String(s.id).padStart(12, '0')}`, id: s.id };
      const access = accessOf(reader, s.permission);
      if (access) {
        schedules.push({
          id: s.id,
          name: s.name,
          department_id: s.department_id,
          access,
          tasks: s.ref_count,
          updated_at: s.updated_at,
        });
      }
      if (schedules.length >= limit) break;
    }
    after = schedules.length >= limit ? undefined : page.next;
    if (!page.next) last = undefined;
  } while (after);
  return { schedules, next_cursor: schedules.length >= limit && last ? encodeCursor(last) : '' };
}

/**
 * POST /schedule/override: `user` on call over [start, end), above every layer. An override cannot
 * change the past: one that starts earlier starts now.
 */
export async function addOverride(
  input: { uid: number; id: number; start: number; end: number; user: number },
  deps: ScheduleDeps = scheduleDeps,
): Promise<OverrideSaved> {
  const s = await scheduleFor(input.uid, input.id, 'write', deps);
  const now = deps.now();
  if (input.end <= input.start) throw ValidationError.of('end', 'must be after start');
  if (input.end <= now)
    throw ValidationError.of('end', 'must be in the future (an override cannot change the past)');
  const start = Math.max(input.start, now);
  if (input.end - start > MAX_OVERRIDE_DAYS * DAY_SECONDS)
    throw ValidationError.of('end', `must be at most ${MAX_OVERRIDE_DAYS} days after start`);
  if ((await deps.getUsers([input.user])).length === 0)
    throw new NotFoundError(`user [${input.user}] not found`);
  const id = await deps.repo.nextOverrideId(s.id);
  if (id === undefined) throw new NotFoundError(`schedule [${s.id}] not found`);
  const override: Override = {
    id,
    start,
    end: input.end,
    user: input.user,
    created_at: now,
    created_by: input.uid,
  };
  await deps.repo.putOverride(s.id, override);
  await requestCoverageCheck(s.id, now, false, deps);
  return { id: s.id, override };
}

/**
 * DELETE /schedule/override: an override that has not started is removed; one that has ends now
 * (what it answered for the past stays). One that has ended is not found.
 */
export async function deleteOverride(
  input: { uid: number; id: number; override_id: number },
  deps: ScheduleDeps = scheduleDeps,
): Promise<OverrideEnded> {
  const s = await scheduleFor(input.uid, input.id, 'write', deps);
  const now = deps.now();
  const o = (await deps.repo.getOverridesEndingAfter(s.id, now)).find((x) => x.id === input.override_id);
  if (!o)
    throw new NotFoundError(
      `override [${input.override_id}] of schedule [${s.id}] not found (or already ended)`,
    );
  const started = o.start < now;
  await deps.repo.endOverride(s.id, o, started ? now : undefined);
  await requestCoverageCheck(s.id, now, false, deps);
  return { id: s.id, override_id: o.id, result: started ? 'ended' : 'deleted', end: started ? now : o.end };
}
