import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/** Outcome of one delivery attempt (behavior 11). */
export type AttemptOutcome = 'delivered' | 'failed' | 'skipped' | 'refused';

/** One recorded delivery attempt of an outbound webhook event. No URL path, query or secret is kept. */
export interface WebhookAttempt {
  event_id: string;
  task_id: number;
  /** 1-based: the message's receive count. */
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

function strip(item: Record<string, unknown>): WebhookAttempt {
  const {
    pk: _pk,
    sk: _sk,
    gsi1pk: _g1,
    gsi1sk: _g2,
    entity: _e,
    schema_version: _v,
    ttl: _t,
    ...rest
  } = item;
  return rest as unknown as WebhookAttempt;
}

/** AP-H1: record an attempt (PutItem; kept 30 days). */
export async function putWebhookAttempt(attempt: WebhookAttempt): Promise<void> {
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.webhookAttempt(attempt.event_id, attempt.attempt),
        ...keys.webhookAttemptByTask(attempt.task_id, attempt.at_ms, attempt.event_id, attempt.attempt),
        entity: 'webhook_attempt',
        schema_version: SCHEMA_VERSION,
        ...attempt,
        ttl: attempt.at + ATTEMPT_TTL_SECONDS,
      },
    }),
  );
}

/** AP-H2: all attempts of one event, in attempt order (Query `WHEVT#<event id>`, consistent). */
export async function listAttemptsOfEvent(eventId: string): Promise<WebhookAttempt[]> {
  const out: WebhookAttempt[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.webhookAttemptsOfEvent(eventId).pk },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) out.push(strip(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
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
