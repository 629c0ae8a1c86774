import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { contentId, db, packLog, putItems, SCHEMA_VERSION, tableName, unpackLog } from '../../db/client.ts';
import { keys, webhookLogDayOf } from '../../db/keys.ts';
import { isEntryCount, isTimedSortKey, msOfTimedSortKey } from '../cursor.ts';
import type { Level } from '../../contracts/levels.ts';
import {
  byTask,
  deliveryLogItems,
  deliveryLogOf,
  deliveryLogTtl,
  type WebhookAttempt,
} from '../webhooks/repository.ts';
import type { CompressNotify } from './compress.ts';
import type { Why } from './explain.ts';
import type { AlarmRecord, PlanKind } from './model.ts';

/**
 * A task's alarm log (AP-P9): every alarm the pipeline processed — stored or not, notified or
 * filtered — as a compact entry, one item per task per consumer batch under
 * `ALOG#<task id>#<UTC day>`. It is the history index (list, filter, page) and, for the alarms a task
 * does not store (`flag_save_db` 0, filtered out), their only trace. Costs one write per task per
 * batch (about ten alarms per write unit); no index entry. A redelivered alarm is logged again (its
 * first log write may be what failed), so a reader drops repeats of a uuid.
 */

/** What came of an alarm, for people: the pipeline's decision folded into six words. */
export type AlarmResult = 'notified' | 'deferred' | 'compressed' | 'filtered' | 'recovered' | 'stored';
export const ALARM_RESULTS: AlarmResult[] = [
  'notified',
  'deferred',
  'compressed',
  'filtered',
  'recovered',
  'stored',
];

export interface AlarmLogEntry {
  uuid: string;
  task_id: number;
  /** History id (0: not stored). */
  history_id: number;
  /** Unix seconds the pipeline processed it (the history's created_at). */
  created_at: number;
  level: Level;
  reported_level: Level;
  decision: PlanKind;
  notify: CompressNotify;
  metric?: string;
  batch?: number;
  k?: number;
  /** Upgrade strategies it fired. */
  upgrades: number;
  stored: boolean;
  /** The reasons, kept here only for an alarm that has no record (the record holds its own). */
  why?: Why;
  /** Expiry of the log item (Unix seconds). */
  expires_at: number;
}

export function resultOf(e: Pick<AlarmLogEntry, 'decision' | 'notify'>): AlarmResult {
  switch (e.decision) {
    case 'drop':
    case 'rejected':
      return 'filtered';
    case 'recovery':
      return 'recovered';
    case 'not_match_stored':
      return 'stored';
    case 'compressed':
      return e.notify === 'now' ? 'notified' : e.notify === 'deferred' ? 'deferred' : 'compressed';
    default:
      return 'notified';
  }
}

/** The log entry of a stored alarm (its reasons stay in the record). */
export function entryOfRecord(r: AlarmRecord, expiresAt = r.expires_at ?? 0): AlarmLogEntry {
  return {
    uuid: r.uuid,
    task_id: r.task_id,
    history_id: r.history.id,
    created_at: r.history.created_at,
    level: r.history.level,
    reported_level: r.reported_level,
    decision: r.outcome,
    notify: r.notify,
    ...(r.history.metric ? { metric: r.history.metric } : {}),
    ...(r.history.batch ? { batch: r.history.batch } : {}),
    ...(r.k !== undefined ? { k: r.k } : {}),
    upgrades: r.upgrades?.length ?? 0,
    stored: true,
    expires_at: expiresAt,
  };
}

/** An entry as stored: [uuid, history id, created_at, level, reported level, decision, notify, metric, batch, k, upgrades, why]. */
type Row = [
  string,
  number,
  number,
  Level,
  Level,
  PlanKind,
  CompressNotify,
  string | null,
  number | null,
  number | null,
  number,
  Why | null,
];

const toRow = (e: AlarmLogEntry): Row => [
  e.uuid,
  e.history_id,
  e.created_at,
  e.level,
  e.reported_level,
  e.decision,
  e.notify,
  e.metric || null,
  e.batch || null,
  e.k ?? null,
  e.upgrades,
  e.why ?? null,
];

function fromItem(item: Record<string, unknown>): AlarmLogEntry[] {
  const taskId = item.task_id as number;
  const expires = item.ttl as number;
  return unpackLog<Row>(item).map(([u, h, t, l, rl, d, n, m, b, k, up, why]) => ({
    uuid: u,
    task_id: taskId,
    history_id: h,
    created_at: t,
    level: l,
    reported_level: rl,
    decision: d,
    notify: n,
    ...(m ? { metric: m } : {}),
    ...(b ? { batch: b } : {}),
    ...(k !== null ? { k } : {}),
    upgrades: up,
    stored: h > 0,
    ...(why ? { why } : {}),
    expires_at: expires,
  }));
}

/** Most JSON a log item holds (a batch's entries are split beyond it). */
const LOG_ITEM_MAX = 64_000;

/**
 * AP-P9 (write) with AP-H2: a consumer batch's alarm log entries and the delivery log of the webhook
 * first attempts it made, in one BatchWriteItem. A task's deliveries ride in its alarm log item (its
 * `deliveries`, read by the delivery log's readers too), so a task costs one item per batch, not two;
 * only when the alarms expire before the deliveries would (a retention under 30 days) do they get a
 * delivery log item of their own. Keys derive from `atMs` and the content, so writing the same again
 * overwrites what a failed write may have stored instead of adding copies.
 */
export async function putBatchLogs(
  entries: AlarmLogEntry[],
  deliveries: WebhookAttempt[],
  atMs: number,
): Promise<void> {
  const items = batchLogItems(entries, deliveries, atMs);
  if (items.length > 0) await putItems(items, 'batch logs');
}

/** The items putBatchLogs writes. */
export function batchLogItems(
  entries: AlarmLogEntry[],
  deliveries: WebhookAttempt[],
  atMs: number,
): Record<string, unknown>[] {
  const logs = alarmLogItems(entries, atMs);
  const deliveriesOf = byTask(deliveries);
  for (const item of logs) {
    const log = deliveriesOf.get(item.task_id as number);
    if (log && (item.ttl as number) >= deliveryLogTtl(log)) {
      item.deliveries = deliveryLogOf(log);
      deliveriesOf.delete(item.task_id as number);
    }
  }
  return [...logs, ...deliveryLogItems([...deliveriesOf.values()].flat())];
}

/** AP-P9 (write): the items of one consumer batch's entries, one per task (written in one BatchWriteItem). */
export function alarmLogItems(entries: AlarmLogEntry[], atMs: number): Record<string, unknown>[] {
  // Items stay far below DynamoDB's 400 KB (each entry's reasons are at most WHY_MAX).
  const chunks: AlarmLogEntry[][] = [];
  for (const log of byTask(entries).values()) {
    let chunk: AlarmLogEntry[] = [];
    let size = 0;
    for (const e of log) {
      const n = JSON.stringify(toRow(e)).length;
      if (chunk.length > 0 && size + n > LOG_ITEM_MAX) {
        chunks.push(chunk);
        chunk = [];
        size = 0;
      }
      chunk.push(e);
      size += n;
    }
    chunks.push(chunk);
  }
  return chunks.map((log) => ({
    ...keys.alarmLog(log[0].task_id, atMs, contentId(log.map((e) => e.uuid))),
    entity: 'alarm_log',
    schema_version: SCHEMA_VERSION,
    task_id: log[0].task_id,
    ...packLog(log.map(toRow)),
    ttl: Math.max(...log.map((e) => e.expires_at)),
  }));
}

export interface AlarmLogFilter {
  level?: Level;
  result?: AlarmResult;
  metric?: string;
  batch?: number;
  uuid?: string;
  history_id?: number;
}

export interface AlarmLogPage {
  entries: AlarmLogEntry[];
  /** Where the next page starts (absent when the window is exhausted). */
  next?: AlarmLogCursor;
  /** Log items read (the cost of the page, in queries' worth of items). */
  scanned: number;
}

/** A position in the log: the day partition, the last item read and how many of its entries were taken. */
export interface AlarmLogCursor {
  day: number;
  sk: string;
  taken: number;
}

const matches = (e: AlarmLogEntry, f: AlarmLogFilter, from: number, to: number) =>
  e.created_at >= from &&
  e.created_at <= to &&
  (f.level === undefined || e.level === f.level) &&
  (f.result === undefined || resultOf(e) === f.result) &&
  (f.metric === undefined || e.metric === f.metric) &&
  (f.batch === undefined || e.batch === f.batch) &&
  (f.uuid === undefined || e.uuid === f.uuid) &&
  (f.history_id === undefined || e.history_id === f.history_id);

/**
 * Whether a cursor can belong to a read of `window`: its item's time lies in the window's range of
 * log items and its day is that time's day (a forged one could make a read walk years of days, or
 * end a day's range before it starts).
 */
export function cursorFits(window: { from: number; to: number }, c: AlarmLogCursor): boolean {
  const ms = msOfTimedSortKey(c.sk);
  return (
    isTimedSortKey(c.sk) &&
    isEntryCount(c.taken) &&
    ms >= window.from * 1000 &&
    ms <= window.to * 1000 + WRITE_LAG_MS &&
    c.day === webhookLogDayOf(ms)
  );
}

/** Items read per request at most: a page of a rare filter over a busy log stops there with a cursor. */
const MAX_ITEMS_PER_PAGE = 500;
/** Items are written within seconds of the alarms they hold: read a little past `to`. */
const WRITE_LAG_MS = 120_000;

/**
 * The log items of a task over a window, newest first: one Query per UTC day (descending, paged by
 * 50). Resuming at `resume`, the item it stopped in comes first (the range ends at that item).
 */
async function* logItems(
  taskId: number,
  window: { from: number; to: number },
  resume?: { day: number; sk: string },
): AsyncGenerator<{ day: number; sk: string; item: Record<string, unknown> }> {
  const firstDay = webhookLogDayOf(window.from * 1000);
  for (let day = resume?.day ?? webhookLogDayOf(window.to * 1000 + WRITE_LAG_MS); day >= firstDay; day--) {
    const from = keys.dayLogSkFrom(window.from * 1000);
    const to = resume && resume.day === day ? resume.sk : keys.dayLogSkFrom(window.to * 1000 + WRITE_LAG_MS);
    // An empty range (a position before the window) has nothing to read, and is no valid BETWEEN.
    if (to < from) continue;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: {
            ':pk': keys.alarmLogDay(taskId, day),
            ':from': from,
            ':to': to,
          },
          ScanIndexForward: false,
          Limit: 50,
          ExclusiveStartKey: start,
        }),
      );
      start = page.LastEvaluatedKey;
      for (const item of page.Items ?? []) yield { day, sk: item.sk as string, item };
    } while (start);
  }
}

/**
 * AP-P9 (read): a task's log entries from `from` to `to` (Unix seconds), newest first, filtered, at
 * most `limit`, resuming at `cursor`. One Query per UTC day (descending, paged); an item's entries are
 * taken newest first. Repeats of a uuid within the page are dropped.
 */
export async function queryAlarmLog(
  taskId: number,
  window: { from: number; to: number },
  filter: AlarmLogFilter,
  limit: number,
  cursor?: AlarmLogCursor,
): Promise<AlarmLogPage> {
  const entries: AlarmLogEntry[] = [];
  const seen = new Set<string>();
  let scanned = 0;
  for await (const { day, sk, item } of logItems(taskId, window, cursor)) {
    scanned++;
    const all = fromItem(item).sort((a, b) => b.created_at - a.created_at);
    const skip = cursor && cursor.day === day && cursor.sk === sk ? cursor.taken : 0;
    for (let i = skip; i < all.length; i++) {
      const e = all[i];
      if (!matches(e, filter, window.from, window.to) || seen.has(e.uuid)) continue;
      seen.add(e.uuid);
      entries.push(e);
      if (entries.length >= limit) return { entries, next: { day, sk, taken: i + 1 }, scanned };
    }
    if (scanned >= MAX_ITEMS_PER_PAGE) return { entries, next: { day, sk, taken: all.length }, scanned };
  }
  return { entries, scanned };
}

/** Items one count reads at most (about 20,000 alarms at ten a batch). */
export const MAX_COUNT_ITEMS = 2_000;

export interface MinuteCount {
  /** Unix seconds of the minute's start. */
  minute: number;
  /** Alarms per level 0..3. */
  levels: [number, number, number, number];
  outcomes: Partial<Record<AlarmResult, number>>;
}

/**
 * AP-P9 (count): a task's processed alarms per minute over a window, by level and outcome, from its
 * log (repeats of a uuid counted once). Reads at most MAX_COUNT_ITEMS items, newest first: `complete`
 * is false when the window held more (the older minutes are then partial).
 */
export async function countAlarmLog(
  taskId: number,
  window: { from: number; to: number },
): Promise<{ minutes: MinuteCount[]; complete: boolean }> {
  const byMinute = new Map<number, MinuteCount>();
  const seen = new Set<string>();
  let read = 0;
  let complete = true;
  for await (const { item } of logItems(taskId, window)) {
    if (read++ >= MAX_COUNT_ITEMS) {
      complete = false;
      break;
    }
    for (const e of fromItem(item)) {
      if (e.created_at < window.from || e.created_at > window.to || seen.has(e.uuid)) continue;
      seen.add(e.uuid);
      const minute = e.created_at - (e.created_at % 60);
      let m = byMinute.get(minute);
      if (!m) {
        m = { minute, levels: [0, 0, 0, 0], outcomes: {} };
        byMinute.set(minute, m);
      }
      m.levels[e.level]++;
      const r = resultOf(e);
      m.outcomes[r] = (m.outcomes[r] ?? 0) + 1;
    }
  }
  return { minutes: [...byMinute.values()].sort((a, b) => a.minute - b.minute), complete };
}
