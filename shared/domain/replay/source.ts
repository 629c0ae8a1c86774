import { ValidationError } from '../errors.ts';
import { type AlarmLogCursor, type AlarmLogEntry, queryAlarmLog } from '../alarms/log.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { getAlarmRecords } from './repository.ts';

/**
 * The alarms of a replay's window: every alarm the task's log has in it (the alarm log lists each
 * processed alarm, stored or not) and the stored records of those it stored. An alarm whose content
 * was not stored (the task stored nothing, the filter dropped it) or whose record has expired cannot
 * be replayed: it is counted as skipped, never left out silently.
 */

/** Longest `from`/`to` window (days), and the default and largest `last`. */
export const MAX_WINDOW_DAYS = 31;
export const DEFAULT_LAST = 500;
export const MAX_LAST = 5_000;
/** Most alarms a `from`/`to` window may hold. */
export const MAX_WINDOW_ALARMS = 20_000;

export interface WindowSpec {
  last?: number;
  from?: number;
  to?: number;
}

export interface Window {
  /** The window asked for: `last`, or `from` and `to`. */
  spec: { last: number } | { from: number; to: number };
  /** The span it covers (Unix seconds): a `last` window spans its alarms. */
  from: number;
  to: number;
}

export interface WindowAlarms {
  window: Window;
  /** Every alarm in the window, oldest first. */
  entries: AlarmLogEntry[];
  /** The window holds more alarms than read (only when reading was capped). */
  more: boolean;
}

export interface LoadedWindow extends WindowAlarms {
  records: AlarmRecord[];
  skipped: { not_stored: number; expired: number };
}

/** The window a request asks for, checked (422 naming the field). */
export function windowOf(spec: WindowSpec, now: number): Window['spec'] {
  if (spec.last !== undefined && (spec.from !== undefined || spec.to !== undefined))
    throw ValidationError.of('last', 'cannot be given with from/to');
  if (spec.from === undefined && spec.to === undefined) return { last: spec.last ?? DEFAULT_LAST };
  if (spec.from === undefined || spec.to === undefined)
    throw ValidationError.of(spec.from === undefined ? 'from' : 'to', 'is required with from/to');
  if (spec.from > spec.to) throw ValidationError.of('from', 'must not be after to');
  if (spec.to - spec.from > MAX_WINDOW_DAYS * 86_400)
    throw ValidationError.of('from', `the window may span at most ${MAX_WINDOW_DAYS} days`);
  if (spec.from > now) throw ValidationError.of('from', 'must not be in the future');
  return { from: spec.from, to: spec.to };
}

export interface SourceDeps {
  queryAlarmLog: typeof queryAlarmLog;
  getAlarmRecords: typeof getAlarmRecords;
}

export const sourceDeps: SourceDeps = { queryAlarmLog, getAlarmRecords };

/**
 * The log entries of the window, at most `limit` (a `last` window: its newest `last`), each alarm once,
 * oldest first. `more` when the window holds more than `limit`.
 */
export async function readWindow(
  taskId: number,
  spec: Window['spec'],
  now: number,
  limit: number,
  deps: SourceDeps = sourceDeps,
): Promise<WindowAlarms> {
  const range = 'last' in spec ? { from: now - MAX_WINDOW_DAYS * 86_400, to: now } : spec;
  const want = 'last' in spec ? Math.min(spec.last, limit) : limit;
  const seen = new Set<string>();
  const entries: AlarmLogEntry[] = [];
  let cursor: AlarmLogCursor | undefined;
  let more = false;
  do {
    const page = await deps.queryAlarmLog(taskId, range, {}, want + 1 - entries.length, cursor);
    for (const e of page.entries) {
      if (seen.has(e.uuid)) continue;
      seen.add(e.uuid);
      if (entries.length < want) entries.push(e);
      else more = true;
    }
    cursor = page.next;
  } while (cursor && !more && entries.length < want + 1);
  // A `last` window of fewer alarms than asked for is not "more".
  if ('last' in spec && entries.length >= spec.last) more = false;
  entries.sort((a, b) => a.created_at - b.created_at || a.history_id - b.history_id);
  const from = 'last' in spec ? (entries[0]?.created_at ?? now) : spec.from;
  const to = 'last' in spec ? (entries.at(-1)?.created_at ?? now) : spec.to;
  return { window: { spec, from, to }, entries, more };
}

/** The stored records of the window's alarms; the others counted as skipped. */
export async function loadRecords(
  taskId: number,
  read: WindowAlarms,
  deps: SourceDeps = sourceDeps,
): Promise<LoadedWindow> {
  const stored = read.entries.filter((e) => e.stored);
  const records = await deps.getAlarmRecords(
    taskId,
    stored.map((e) => e.uuid),
  );
  return {
    ...read,
    records,
    skipped: { not_stored: read.entries.length - stored.length, expired: stored.length - records.length },
  };
}
