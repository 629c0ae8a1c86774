import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { nowMs } from '../../clock.ts';
import {
  contentId,
  db,
  fromItem,
  isConditionFailure,
  packLog,
  putItems,
  queryAll,
  SCHEMA_VERSION,
  tableName,
  unpackLog,
} from '../../db/client.ts';
import { keys, webhookLogDayOf } from '../../db/keys.ts';
import { type DayLogOptions, dayLogItems } from '../day-log.ts';

/** Outcome of one delivery attempt (API guide §12.5). */
export type AttemptOutcome = 'delivered' | 'failed' | 'skipped' | 'refused';

/** One recorded delivery attempt of an outbound webhook event. No URL path, query or secret is kept. */
export interface WebhookAttempt {
  event_id: string;
  task_id: number;
  /** 1-based: the receive count of the message that made the attempt. */
  attempt: number;
  outcome: AttemptOutcome;
  /** Event name and type, for an operator's listing. */
  event: string;
  type: string;
  /** Scheme, host and port of the target (no path or query: they may hold tokens). */
  target?: string;
  /** HTTP status, when the receiver answered. */
  status?: number;
  /** Why it failed, was skipped or refused (timeout, connection error, ...). */
  error?: string;
  duration_ms: number;
  /** Service time of the attempt, ms. */
  at_ms: number;
  /** Unix seconds. */
  at: number;
}

const ATTEMPT_TTL_SECONDS = 30 * 24 * 3600;
/** Days a task's delivery log reaches back: its items' lifetime. */
export const LOG_DAYS = ATTEMPT_TTL_SECONDS / 86_400;

/**
 * Attempts are recorded two ways (KEY-DESIGN AP-H1, AP-H2), so that delivering an event costs at most
 * one table write per consumer batch in the common case:
 * - an event's first attempt that settles it (delivered, skipped, refused) goes into its task's
 *   delivery log: one item per task per consumer batch holding every such attempt of the batch (in
 *   the alarm pipeline, the batch's alarm log item of that task, which is written anyway);
 * - every other attempt (a failure, or any attempt of a retried message) is an item of its own under
 *   the event, so the retries of a failing event read as one list.
 */
function attemptItem(a: WebhookAttempt): Record<string, unknown> {
  return {
    ...keys.webhookAttempt(a.event_id, a.at_ms, a.attempt),
    ...keys.webhookAttemptByTask(a.task_id, a.at_ms, `${a.event_id}#${a.attempt}`),
    entity: 'webhook_attempt',
    schema_version: SCHEMA_VERSION,
    ...a,
    ttl: a.at + ATTEMPT_TTL_SECONDS,
  };
}

/**
 * AP-H7: take an attempt of a retried event, unless a copy of its message took it (SQS delivers a
 * message at least once: two copies of a retry must not each start a line of retries). False when
 * taken already; kept as long as the attempts.
 */
export async function claimRetry(eventId: string, attempt: number, atSeconds: number): Promise<boolean> {
  try {
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.webhookRetryClaim(eventId, attempt),
          entity: 'webhook_retry_claim',
          schema_version: SCHEMA_VERSION,
          ttl: atSeconds + ATTEMPT_TTL_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * AP-H8: whether an event was put in the dead-letter queue after an attempt later than `since` (its
 * latest redrive's, 0 for none; its marks, read consistently): a message of it received again, however
 * often, must not put it there twice.
 */
export async function wasDeadLettered(eventId: string, since: number): Promise<boolean> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': keys.webhookDeadLetterMark(eventId, 0).pk,
        ':from': keys.webhookDeadLetterMark(eventId, since + 1).sk,
        ':to': keys.webhookDeadLetterMark(eventId, 9_999).sk,
      },
      ConsistentRead: true,
      Limit: 1,
    }),
  );
  return (out.Count ?? 0) > 0;
}

/** AP-H8 (write): the marks of events put in the dead-letter queue (BatchWriteItem; kept as the attempts). */
export async function markDeadLettered(marks: { eventId: string; attempt: number }[], atSeconds: number) {
  await putItems(
    marks.map((m) => ({
      ...keys.webhookDeadLetterMark(m.eventId, m.attempt),
      entity: 'webhook_dead_letter_mark',
      schema_version: SCHEMA_VERSION,
      ttl: atSeconds + ATTEMPT_TTL_SECONDS,
    })),
    'webhook dead-letter marks',
  );
}

/** AP-H1: record attempts of their own (BatchWriteItem; kept 30 days). */
export async function putWebhookAttempts(attempts: WebhookAttempt[]): Promise<void> {
  if (attempts.length > 0) await putItems(attempts.map(attemptItem), 'webhook attempts');
}

/**
 * A delivery log entry as stored: one JSON array per attempt in the item's `log` string
 * ([event id, attempt, outcome, event, type, status, error, duration ms, at ms - the item's base_ms]),
 * about 100 bytes, so a batch of ten events is one write unit.
 */
type LogEntry = [string, number, string, string, string, number | null, string | null, number, number];

/** Outcomes in the log, one letter each. */
const OUTCOME_CODES: Record<AttemptOutcome, string> = {
  delivered: 'd',
  failed: 'f',
  skipped: 's',
  refused: 'r',
};
const OUTCOMES = new Map(Object.entries(OUTCOME_CODES).map(([k, v]) => [v, k as AttemptOutcome]));

const toEntry = (a: WebhookAttempt, baseMs: number): LogEntry => [
  a.event_id,
  a.attempt,
  OUTCOME_CODES[a.outcome],
  a.event,
  a.type,
  a.status ?? null,
  a.error ?? null,
  a.duration_ms,
  a.at_ms - baseMs,
];

/** The attempts of a delivery log item. */
export function fromLog(item: Record<string, unknown>): WebhookAttempt[] {
  const taskId = item.task_id as number;
  const target = item.target as string | undefined;
  const base = item.base_ms as number;
  return unpackLog<LogEntry>(item).map(([e, a, o, n, y, s, r, d, t]) => ({
    event_id: e,
    task_id: taskId,
    attempt: a,
    outcome: OUTCOMES.get(o) ?? 'failed',
    event: n,
    type: y,
    ...(target ? { target } : {}),
    ...(s !== null ? { status: s } : {}),
    ...(r !== null ? { error: r } : {}),
    duration_ms: d,
    at_ms: base + t,
    at: Math.floor((base + t) / 1000),
  }));
}

/**
 * AP-H2: record the settling first attempts of one consumer batch as one item per task (one
 * BatchWriteItem for all of them; kept 30 days). The log has no index entry, so one item is one
 * write: about ten events per write unit.
 */
export async function putDeliveryLogs(attempts: WebhookAttempt[]): Promise<void> {
  const items = deliveryLogItems(attempts);
  if (items.length > 0) await putItems(items, 'webhook delivery log');
}

/** Log rows (alarm log entries, attempts) grouped by task, in order. */
export function byTask<T extends { task_id: number }>(rows: T[]): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const r of rows) {
    const group = groups.get(r.task_id);
    if (group) group.push(r);
    else groups.set(r.task_id, [r]);
  }
  return groups;
}

/** When the log of one task's attempts (of one batch) expires: 30 days after the first. */
export const deliveryLogTtl = (log: WebhookAttempt[]) =>
  Math.floor(Math.min(...log.map((a) => a.at_ms)) / 1000) + ATTEMPT_TTL_SECONDS;

/**
 * The delivery log of one task's attempts: the target, the first attempt's time and the entries
 * (compressed). A delivery log item holds it at its top level; an alarm log item that carries its
 * batch's deliveries (AP-H2) holds it in its `deliveries` map.
 */
export function deliveryLogOf(log: WebhookAttempt[]): Record<string, unknown> {
  const base = Math.min(...log.map((a) => a.at_ms));
  const target = log.find((a) => a.target)?.target;
  return {
    ...(target ? { target } : {}),
    base_ms: base,
    ...packLog(log.map((a) => toEntry(a, base))),
  };
}

/** The delivery log items of a batch's settling first attempts (AP-H2), to write with others. */
export function deliveryLogItems(attempts: WebhookAttempt[]): Record<string, unknown>[] {
  return [...byTask(attempts).values()].map((log) => ({
    ...keys.webhookLog(
      log[0].task_id,
      Math.min(...log.map((a) => a.at_ms)),
      contentId(log.map((a) => `${a.event_id}#${a.attempt}`)),
    ),
    entity: 'webhook_log',
    schema_version: SCHEMA_VERSION,
    task_id: log[0].task_id,
    ...deliveryLogOf(log),
    ttl: deliveryLogTtl(log),
  }));
}

/**
 * The items of a task's delivery log on one UTC day in sort key order (`sk` within `range`): its
 * delivery log items (`WHLOG#<task>#<day>`) merged with the alarm log items that carry deliveries
 * (`ALOG#<task>#<day>`, only their deliveries read): `day-log.dayLogItems`.
 */
export const deliveryLogDay = (taskId: number, day: number, opts: DayLogOptions = {}) =>
  dayLogItems(keys.webhookLogDay(taskId, day), opts, {
    pk: keys.alarmLogDay(taskId, day),
    attribute: 'deliveries',
  });

/**
 * A task's delivery log items from `fromMs` to `toMs` (per UTC day of the window, one Query of each
 * partition: dayLogItems; a window is cut to what the log can hold: the 30 days that end at `toMs`).
 */
async function queryLog(taskId: number, fromMs: number, toMs: number): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  const last = webhookLogDayOf(toMs);
  const range = { from: keys.dayLogSkFrom(fromMs), to: keys.dayLogSkFrom(toMs + 1) };
  for (let day = Math.max(webhookLogDayOf(fromMs), last - LOG_DAYS); day <= last; day++) {
    for await (const item of deliveryLogDay(taskId, day, { range })) items.push(item);
  }
  return items;
}

/**
 * AP-H3: all attempts of one event, oldest first: its own attempt items (Query `WHEVT#<event id>`),
 * plus, when the task and a time window are given, its settling first attempt from the task's delivery
 * log over the window (Query `WHLOG#<task id>#<day>` and `ALOG#<task id>#<day>`: dayLogItems).
 */
export async function listAttemptsOfEvent(
  eventId: string,
  log?: { taskId: number; fromMs: number; toMs: number },
): Promise<WebhookAttempt[]> {
  return (await listAttemptsOfEvents([eventId], log)).get(eventId) ?? [];
}

/**
 * AP-H3 for several events of one task at once (an alarm's events, for its trace): one Query per
 * event and one pass over the task's delivery log in the window. Every event id is a key of the map.
 */
export async function listAttemptsOfEvents(
  eventIds: string[],
  log?: { taskId: number; fromMs: number; toMs: number },
): Promise<Map<string, WebhookAttempt[]>> {
  const [own, logged] = await Promise.all([
    Promise.all(
      eventIds.map((eventId) =>
        queryAll({
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :attempt)',
          ExpressionAttributeValues: {
            ':pk': keys.webhookAttemptsOfEvent(eventId).pk,
            ':attempt': keys.webhookAttemptPrefix(),
          },
          ConsistentRead: true,
        }),
      ),
    ),
    log ? queryLog(log.taskId, log.fromMs, log.toMs) : [],
  ]);
  const byEvent = new Map<string, WebhookAttempt[]>(
    eventIds.map((id, i) => [id, own[i].map((item) => fromItem<WebhookAttempt>(item, 'ttl'))]),
  );
  for (const a of logged.flatMap(fromLog)) byEvent.get(a.event_id)?.push(a);
  for (const list of byEvent.values()) list.sort((a, b) => a.at_ms - b.at_ms);
  return byEvent;
}

/**
 * AP-H4: a task's most recent attempts, newest first: its attempts of their own (Query gsi1
 * `WHTASK#<task id>`, descending) and its delivery log, day by day back from today until `limit`
 * entries are found (a Query of each partition per day: dayLogItems; at most 30 days for a task with
 * nothing delivered lately).
 */
export async function listRecentAttemptsOfTask(
  taskId: number,
  limit = 50,
  atMs = nowMs(),
): Promise<WebhookAttempt[]> {
  const ownPage = db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.webhookAttemptsOfTask(taskId).gsi1pk },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  const logged: WebhookAttempt[] = [];
  const today = webhookLogDayOf(atMs);
  for (let day = today; day > today - LOG_DAYS && logged.length < limit; day--) {
    for await (const item of deliveryLogDay(taskId, day, { descending: true, pageSize: limit })) {
      logged.push(...fromLog(item));
      if (logged.length >= limit) break;
    }
  }
  const own = ((await ownPage).Items ?? []).map((item) => fromItem<WebhookAttempt>(item, 'ttl'));
  return [...own, ...logged].sort((a, b) => b.at_ms - a.at_ms).slice(0, limit);
}
