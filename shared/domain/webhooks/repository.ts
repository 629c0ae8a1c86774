import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, fromItem, isConditionFailure, queryAll, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/** Outcome of one delivery attempt (behavior 11). */
export type AttemptOutcome = 'delivered' | 'failed' | 'skipped' | 'refused';

/** One recorded delivery attempt of an outbound webhook event. No URL path, query or secret is kept. */
export interface WebhookAttempt {
  event_id: string;
  task_id: number;
  /** Position of the attempt among all attempts of the event (the sort key; unique per event). */
  seq: number;
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

const strip = (item: Record<string, unknown>) => fromItem<WebhookAttempt>(item, 'ttl');

/** AP-H1: record an attempt (PutItem; kept 30 days). */
export async function putWebhookAttempt(attempt: WebhookAttempt): Promise<void> {
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.webhookAttempt(attempt.event_id, attempt.seq),
        ...keys.webhookAttemptByTask(attempt.task_id, attempt.at_ms, attempt.event_id, attempt.seq),
        entity: 'webhook_attempt',
        schema_version: SCHEMA_VERSION,
        ...attempt,
        ttl: attempt.at + ATTEMPT_TTL_SECONDS,
      },
    }),
  );
}

/** AP-H2: all attempts of one event, in order (Query `WHEVT#<event id>`, `sk` begins with `ATTEMPT#`). */
export async function listAttemptsOfEvent(eventId: string): Promise<WebhookAttempt[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :attempt)',
    ExpressionAttributeValues: {
      ':pk': keys.webhookAttemptsOfEvent(eventId).pk,
      ':attempt': keys.webhookAttemptPrefix(),
    },
    ConsistentRead: true,
  });
  return items.map(strip);
}

/** AP-H3: a task's most recent attempts, newest first (Query gsi1 `WHTASK#<task id>`, descending). */
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
  return (page.Items ?? []).map(strip);
}

export type ClaimResult = { claimed: true; seq: number } | { claimed: false; delivered: boolean };

/**
 * AP-H4: claims an event for one send (UpdateItem on `WHEVT#<event id>` / `CLAIM`, conditioned on
 * "not delivered and not leased"), so duplicate messages of one event (a producer that ran twice)
 * never send it at the same time or after it was delivered. Returns the attempt's sequence number
 * within the event, or why the claim failed.
 */
export async function claimWebhookEvent(
  eventId: string,
  taskId: number,
  nowMs: number,
  leaseMs: number,
): Promise<ClaimResult> {
  const key = keys.webhookClaim(eventId);
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression:
          'SET lease_until = :lease, task_id = :task, entity = :entity, schema_version = :v, #ttl = :ttl ADD seq :one',
        ConditionExpression:
          'attribute_not_exists(delivered_at) AND (attribute_not_exists(lease_until) OR lease_until < :now)',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':lease': nowMs + leaseMs,
          ':task': taskId,
          ':entity': 'webhook_claim',
          ':v': SCHEMA_VERSION,
          ':ttl': Math.floor(nowMs / 1000) + ATTEMPT_TTL_SECONDS,
          ':one': 1,
          ':now': nowMs,
        },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return { claimed: true, seq: Number(out.Attributes?.seq ?? 1) };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const held = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
    return { claimed: false, delivered: held.Item?.delivered_at !== undefined };
  }
}

/** AP-H5: ends a claim: marks the event delivered (no send ever again), or frees it for a retry. */
export async function releaseWebhookEvent(eventId: string, delivered: boolean, nowMs: number): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.webhookClaim(eventId),
      UpdateExpression: delivered ? 'SET delivered_at = :now REMOVE lease_until' : 'REMOVE lease_until',
      ...(delivered ? { ExpressionAttributeValues: { ':now': Math.floor(nowMs / 1000) } } : {}),
    }),
  );
}
