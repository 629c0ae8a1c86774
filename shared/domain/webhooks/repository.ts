import { randomBytes } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, fromItem, putItems, queryAll, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/** Outcome of one delivery attempt (behavior 11). */
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

/**
 * Attempts are recorded two ways (KEY-DESIGN AP-H1, AP-H2), so that delivering an event costs at most
 * one table write per consumer batch in the common case:
 * - an event's first attempt that settles it (delivered, skipped, refused) goes into its task's
 *   delivery log: one item per task per consumer batch holding every such attempt of the batch;
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

/** AP-H1: record attempts of their own (BatchWriteItem; kept 30 days). */
export async function putWebhookAttempts(attempts: WebhookAttempt[]): Promise<void> {
  if (attempts.length > 0) await putItems(attempts.map(attemptItem), 'webhook attempts');
}

/** The stored form of a delivery log entry (short names: ten of them fit in about one kilobyte). */
interface LogEntry {
  e: string;
  a: number;
  o: AttemptOutcome;
  n: string;
  y: string;
  s?: number;
  r?: string;
  d: number;
  t: number;
}

const toEntry = (a: WebhookAttempt): LogEntry => ({
  e: a.event_id,
  a: a.attempt,
  o: a.outcome,
  n: a.event,
  y: a.type,
  ...(a.status !== undefined ? { s: a.status } : {}),
  ...(a.error !== undefined ? { r: a.error } : {}),
  d: a.duration_ms,
  t: a.at_ms,
});

function fromLog(item: Record<string, unknown>): WebhookAttempt[] {
  const taskId = item.task_id as number;
  const target = item.target as string | undefined;
  return (item.entries as LogEntry[]).map((x) => ({
    event_id: x.e,
    task_id: taskId,
    attempt: x.a,
    outcome: x.o,
    event: x.n,
    type: x.y,
    ...(target ? { target } : {}),
    ...(x.s !== undefined ? { status: x.s } : {}),
    ...(x.r !== undefined ? { error: x.r } : {}),
    duration_ms: x.d,
    at_ms: x.t,
    at: Math.floor(x.t / 1000),
  }));
}

/**
 * AP-H2: record the settling first attempts of one task's events in one consumer batch as one item
 * (PutItem; kept 30 days). `attempts` share the task (and its target).
 */
export async function putDeliveryLog(attempts: WebhookAttempt[]): Promise<void> {
  if (attempts.length === 0) return;
  const first = attempts[0];
  const atMs = Math.min(...attempts.map((a) => a.at_ms));
  const id = randomBytes(6).toString('hex');
  await putItems(
    [
      {
        ...keys.webhookLog(first.task_id, atMs, id),
        ...keys.webhookAttemptByTask(first.task_id, atMs, `~log#${id}`),
        entity: 'webhook_log',
        schema_version: SCHEMA_VERSION,
        task_id: first.task_id,
        ...(first.target ? { target: first.target } : {}),
        entries: attempts.map(toEntry),
        event_ids: new Set(attempts.map((a) => a.event_id)),
        ttl: Math.floor(atMs / 1000) + ATTEMPT_TTL_SECONDS,
      },
    ],
    'webhook delivery log',
  );
}

const expand = (item: Record<string, unknown>): WebhookAttempt[] =>
  item.entity === 'webhook_log' ? fromLog(item) : [fromItem<WebhookAttempt>(item, 'ttl')];

/**
 * AP-H3: all attempts of one event, oldest first: its own attempt items (Query `WHEVT#<event id>`),
 * plus, when the task and a time window are given, its settling first attempt from the task's delivery
 * log (Query gsi1 `WHTASK#<task id>` over the window, filtered on the log's event ids).
 */
export async function listAttemptsOfEvent(
  eventId: string,
  log?: { taskId: number; fromMs: number; toMs: number },
): Promise<WebhookAttempt[]> {
  const own = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :attempt)',
    ExpressionAttributeValues: {
      ':pk': keys.webhookAttemptsOfEvent(eventId).pk,
      ':attempt': keys.webhookAttemptPrefix(),
    },
    ConsistentRead: true,
  });
  const logged = log
    ? await queryAll({
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk BETWEEN :from AND :to',
        FilterExpression: 'contains(event_ids, :e)',
        ExpressionAttributeValues: {
          ':pk': keys.webhookAttemptsOfTask(log.taskId).gsi1pk,
          ':from': keys.webhookAttemptSkFrom(log.fromMs),
          ':to': keys.webhookAttemptSkFrom(log.toMs + 1),
          ':e': eventId,
        },
      })
    : [];
  return [...own.flatMap(expand), ...logged.flatMap(fromLog).filter((a) => a.event_id === eventId)].sort(
    (a, b) => a.at_ms - b.at_ms,
  );
}

/** AP-H4: a task's most recent attempts, newest first (Query gsi1 `WHTASK#<task id>`, descending). */
export async function listRecentAttemptsOfTask(taskId: number, limit = 50): Promise<WebhookAttempt[]> {
  const page = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.webhookAttemptsOfTask(taskId).gsi1pk },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  return (page.Items ?? [])
    .flatMap(expand)
    .sort((a, b) => b.at_ms - a.at_ms)
    .slice(0, limit);
}
