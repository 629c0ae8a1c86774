import { nowSeconds } from '../../clock.ts';
import { getItems } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { decodeCursor, encodeCursor, isEntryCount, isTimedSortKey } from '../cursor.ts';
import { NotFoundError, ValidationError } from '../errors.ts';
import { taskForUser } from '../tasks/access.ts';
import type { Task } from '../tasks/model.ts';
import { LEVEL_NAMES, type Level } from '../../contracts/levels.ts';
import {
  type AlarmLogCursor,
  type AlarmLogEntry,
  type AlarmLogFilter,
  type AlarmResult,
  countAlarmLog,
  cursorFits,
  entryOfRecord,
  queryAlarmLog,
  resultOf,
} from '../alarms/log.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { alarmRecordOf, getAlarmRecord } from '../alarms/repository.ts';
import type { AlarmList, AlarmShown, AlarmStats, AlarmView } from '../alarms/responses.ts';

/**
 * The read side of the alarm pipeline: a task's alarm history from its alarm log and one alarm (its
 * decision trace: alarm-trace.ts). Every read names its acting user (shared/domain/tasks/access.ts).
 */

/** Longest window one history request reads (one Query per UTC day). */
export const MAX_WINDOW_DAYS = 31;

export interface HistoryQuery {
  uid: number;
  task_id: number;
  from?: number;
  to?: number;
  level?: Level;
  outcome?: AlarmResult;
  metric?: string;
  batch?: number;
  limit?: number;
  cursor?: string;
}

/** `[day, sort key, entries taken]`: the shape of an alarm log position (cursorFits checks the values). */
const isLogCursor = (v: unknown): v is [number, string, number] =>
  Array.isArray(v) &&
  v.length === 3 &&
  Number.isSafeInteger(v[0]) &&
  isTimedSortKey(v[1]) &&
  isEntryCount(v[2]);

function logCursorOf(text: string): AlarmLogCursor {
  const [day, sk, taken] = decodeCursor(text, isLogCursor, 'is not one this service returned');
  return { day, sk, taken };
}

/** The window of a history request: `to` defaults to now, `from` to MAX_WINDOW_DAYS before it. */
function windowOf(q: { from?: number; to?: number }, now: number) {
  const to = q.to ?? now;
  const from = q.from ?? to - MAX_WINDOW_DAYS * 86_400;
  if (from > to) throw new ValidationError([{ field: 'from', message: 'from must not be after to' }]);
  if (to - from > MAX_WINDOW_DAYS * 86_400)
    throw new ValidationError([
      { field: 'from', message: `the window may span at most ${MAX_WINDOW_DAYS} days` },
    ]);
  return { from, to };
}

export function viewOf(
  e: AlarmLogEntry,
  stored?: { ctn: Record<string, unknown>; notice_time: number },
): AlarmView {
  return {
    uuid: e.uuid,
    history_id: e.history_id,
    created_at: e.created_at,
    level: e.level,
    level_name: LEVEL_NAMES[e.level],
    reported_level: e.reported_level,
    outcome: resultOf(e),
    decision: e.decision,
    ...(e.metric ? { metric: e.metric } : {}),
    ...(e.batch ? { batch: e.batch } : {}),
    ...(e.k !== undefined ? { k: e.k } : {}),
    upgrades: e.upgrades,
    stored: e.stored,
    ...(stored ? { notice_time: stored.notice_time, ctn: stored.ctn } : {}),
  };
}

/** The content of the stored alarms of a page (one BatchGetItem, projected to the history). */
async function contentOf(entries: AlarmLogEntry[]) {
  const stored = entries.filter((e) => e.stored);
  const items = await getItems(
    stored.map((e) => keys.alarm(e.task_id, e.uuid)),
    { projection: 'pk, history, alarm_json', what: 'alarm records' },
  );
  const out = new Map<string, { ctn: Record<string, unknown>; notice_time: number }>();
  for (const item of items) {
    const h = (alarmRecordOf(item) as AlarmRecord).history;
    out.set(h.uuid, { ctn: h.ctn, notice_time: h.notice_time });
  }
  return out;
}

/** GET /alarmtask/alarms: a task's processed alarms, newest first, filtered, paged. */
export async function listAlarms(q: HistoryQuery): Promise<AlarmList> {
  await taskForUser(q.uid, q.task_id);
  const window = windowOf(q, nowSeconds());
  const filter: AlarmLogFilter = {
    ...(q.level !== undefined ? { level: q.level } : {}),
    ...(q.outcome ? { result: q.outcome } : {}),
    ...(q.metric ? { metric: q.metric } : {}),
    ...(q.batch ? { batch: q.batch } : {}),
  };
  const cursor = q.cursor ? logCursorOf(q.cursor) : undefined;
  if (cursor && !cursorFits(window, cursor))
    throw ValidationError.of('cursor', 'does not belong to this window');
  const page = await queryAlarmLog(q.task_id, window, filter, q.limit ?? 20, cursor);
  const content = await contentOf(page.entries);
  return {
    alarms: page.entries.map((e) => viewOf(e, content.get(e.uuid))),
    next_cursor: page.next ? encodeCursor([page.next.day, page.next.sk, page.next.taken]) : '',
    window,
  };
}

/** Longest window of the per-minute counts. */
export const MAX_STATS_HOURS = 24;

/**
 * GET /alarmtask/alarms/stats: a task's alarms per minute by level and outcome (default: the last
 * hour; at most MAX_STATS_HOURS), for the console's charts.
 */
export async function alarmStats(q: {
  uid: number;
  task_id: number;
  from?: number;
  to?: number;
}): Promise<AlarmStats> {
  await taskForUser(q.uid, q.task_id);
  const to = q.to ?? nowSeconds();
  const from = q.from ?? to - 3600;
  if (from > to) throw new ValidationError([{ field: 'from', message: 'from must not be after to' }]);
  if (to - from > MAX_STATS_HOURS * 3600)
    throw new ValidationError([
      { field: 'from', message: `the window may span at most ${MAX_STATS_HOURS} hours` },
    ]);
  const { minutes, complete } = await countAlarmLog(q.task_id, { from, to });
  return { window: { from, to }, minutes, complete };
}

/**
 * The log entry of one alarm: by uuid, or by history id (a search of the task's log over the window,
 * default the last MAX_WINDOW_DAYS days: history ids are not time-ordered across containers).
 */
async function findEntry(
  taskId: number,
  by: { uuid?: string; history_id?: number; from?: number; to?: number },
): Promise<AlarmLogEntry | undefined> {
  const window = windowOf(by, nowSeconds());
  const filter: AlarmLogFilter = by.uuid ? { uuid: by.uuid } : { history_id: by.history_id };
  let cursor: AlarmLogCursor | undefined;
  let read = 0;
  do {
    const page = await queryAlarmLog(taskId, window, filter, 1, cursor);
    if (page.entries.length > 0) return page.entries[0];
    read += page.scanned;
    cursor = page.next;
    // A busy task's month of log is far too much for one request: search a narrower window.
    if (cursor && read >= MAX_SEARCH_ITEMS) {
      throw new NotFoundError(
        `alarm [${by.uuid ?? by.history_id}] of task [${taskId}] not found in the ${read} most recent log items of the window; narrow it with from/to`,
      );
    }
  } while (cursor);
  return undefined;
}

/** Log items one lookup by history id (or of an unstored alarm) reads at most (about 20,000 alarms). */
const MAX_SEARCH_ITEMS = 2_000;

export interface AlarmRef {
  uid: number;
  task_id: number;
  uuid?: string;
  history_id?: number;
  from?: number;
  to?: number;
}

export interface Located {
  task: Task;
  record?: AlarmRecord;
  entry?: AlarmLogEntry;
}

export async function locate(ref: AlarmRef): Promise<Located> {
  if (!ref.uuid && !ref.history_id)
    throw new ValidationError([{ field: 'uuid', message: 'uuid or history_id is required' }]);
  const task = await taskForUser(ref.uid, ref.task_id);
  let uuid = ref.uuid;
  let entry: AlarmLogEntry | undefined;
  if (!uuid) {
    entry = await findEntry(task.id, ref);
    uuid = entry?.uuid;
  }
  const record = uuid ? await getAlarmRecord(task.id, uuid) : undefined;
  // An alarm with no record (filtered out, a task that stores nothing) is known by its log entry only.
  if (!record && !entry && uuid) entry = await findEntry(task.id, { uuid, from: ref.from, to: ref.to });
  if (!record && !entry)
    throw new NotFoundError(`alarm [${ref.uuid ?? ref.history_id}] of task [${task.id}] not found`);
  return { task, record, entry };
}

/** GET /alarmtask/alarm: one alarm by uuid or history id. */
export async function showAlarm(ref: AlarmRef): Promise<AlarmShown> {
  const { record, entry } = await locate(ref);
  const e = record ? entryOfRecord(record) : (entry as AlarmLogEntry);
  return {
    alarm: {
      ...viewOf(e, record ? { ctn: record.history.ctn, notice_time: record.history.notice_time } : undefined),
      ...(record ? { reported_at: record.reported_at, processed_at: record.processed_at } : {}),
      ...(e.expires_at ? { expires_at: e.expires_at } : {}),
    },
  };
}
