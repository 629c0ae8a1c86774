import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  db,
  fromItem,
  isConditionFailure,
  putItems,
  queryAll,
  SCHEMA_VERSION,
  tableName,
} from '../../db/client.ts';
import { keys, NOTIFY_TASK_SHARDS, shardOf } from '../../db/keys.ts';
import type { NotifyScene } from '../../messaging/messages.ts';
import type { NotifyChannel } from './templates.ts';

/**
 * The only DynamoDB code of the notification module: job state (idempotency and lease), delivery
 * attempts, and the per-robot rate items. See shared/db/KEY-DESIGN.md (AP-N1..AP-N8).
 */

/** Outcome of one attempt. `failed`, `throttled` and `rate_limited` are retried; the others are final. */
export type AttemptOutcome = 'delivered' | 'failed' | 'rejected' | 'skipped' | 'throttled' | 'rate_limited';

export interface AttemptRecord {
  job_id: string;
  task_id: number;
  channel: NotifyChannel;
  scene: NotifyScene;
  /** Who or what was addressed, secrets masked (robot token, e-mail, phone). */
  target: string;
  outcome: AttemptOutcome;
  /** Provider response code (`errcode`, SMTP/HTTP status, AWS error name) or our reason code. */
  code: string;
  /** Short human-readable detail (never a secret). */
  detail?: string;
  /** Delivery attempt of the job (the queue's receive count). */
  attempt: number;
  duration_ms: number;
  /** Unix seconds. */
  at: number;
  at_ms: number;
  /** Order within one delivery run. */
  seq: number;
  ttl: number;
}

export type JobStatus = 'pending' | 'delivered' | 'rejected' | 'skipped';

export interface JobState {
  job_id: string;
  task_id: number;
  status: JobStatus;
  /** Targets already served (delivered or finally refused), so a retry does not send them again. */
  done: string[];
  attempts: number;
  lease_until?: number;
  updated_at: number;
}

/** Days attempts and job states are kept. */
export const ATTEMPT_TTL_DAYS = 30;
const DAY = 86_400;

function stripJob(item: Record<string, unknown>): JobState {
  return {
    job_id: item.job_id as string,
    task_id: item.task_id as number,
    status: item.status as JobStatus,
    done: (item.done as string[] | undefined) ?? [],
    attempts: (item.attempts as number | undefined) ?? 0,
    lease_until: item.lease_until as number | undefined,
    updated_at: item.updated_at as number,
  };
}

export type ClaimResult =
  | { claimed: true; state: JobState }
  | { claimed: false; state: JobState | undefined };

/**
 * AP-N1: claim a job for delivery. Succeeds when the job is new, or pending and not leased by
 * another delivery (a lease that ran out is taken over). Counts the attempt.
 */
export async function claimJob(
  jobId: string,
  taskId: number,
  now: number,
  leaseSeconds: number,
): Promise<ClaimResult> {
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.notifyJob(jobId),
        UpdateExpression:
          'SET entity = :e, schema_version = :v, job_id = :j, task_id = :t, #s = if_not_exists(#s, :pending), ' +
          'done = if_not_exists(done, :empty), lease_until = :lease, updated_at = :now, #ttl = :ttl ADD attempts :one',
        ConditionExpression:
          'attribute_not_exists(pk) OR (#s = :pending AND (attribute_not_exists(lease_until) OR lease_until <= :now))',
        ExpressionAttributeNames: { '#s': 'status', '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':e': 'notify_job',
          ':v': SCHEMA_VERSION,
          ':j': jobId,
          ':t': taskId,
          ':pending': 'pending',
          ':empty': [],
          ':lease': now + leaseSeconds,
          ':now': now,
          ':ttl': now + ATTEMPT_TTL_DAYS * DAY,
          ':one': 1,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { claimed: true, state: stripJob(out.Attributes ?? {}) };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    return { claimed: false, state: await getJobState(jobId) };
  }
}

/** AP-N2: a job's state. */
export async function getJobState(jobId: string): Promise<JobState | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.notifyJob(jobId), ConsistentRead: true }),
  );
  return out.Item ? stripJob(out.Item) : undefined;
}

/**
 * AP-N3: end a delivery run: record the served targets and either finish the job (`status` final)
 * or leave it pending for the retry. Releases the lease.
 */
export async function settleJob(
  jobId: string,
  status: JobStatus,
  done: string[],
  now: number,
): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.notifyJob(jobId),
      UpdateExpression: 'SET #s = :s, done = :done, updated_at = :now REMOVE lease_until',
      ExpressionAttributeNames: { '#s': 'status' },
      ExpressionAttributeValues: { ':s': status, ':done': done, ':now': now },
    }),
  );
}

function attemptItem(a: AttemptRecord): Record<string, unknown> {
  const shard = shardOf(a.job_id, NOTIFY_TASK_SHARDS);
  return {
    ...keys.notifyAttempt(a.job_id, a.at_ms, a.seq),
    ...keys.notifyAttemptOfTask(a.task_id, shard, a.at_ms, a.job_id, a.seq),
    entity: 'notify_attempt',
    schema_version: SCHEMA_VERSION,
    ...a,
  };
}

/** AP-N4: record attempts (BatchWriteItem, 25 per call, unprocessed items retried). */
export async function putAttempts(attempts: AttemptRecord[]): Promise<void> {
  await putItems(attempts.map(attemptItem), 'notification attempts');
}

const stripAttempt = (item: Record<string, unknown>) => fromItem<AttemptRecord>(item);

/** AP-N5: the attempts of one job, oldest first (one Query). */
export async function listAttemptsOfJob(jobId: string): Promise<AttemptRecord[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: {
      ':pk': keys.notifyJobPartition(jobId),
      ':prefix': keys.notifyAttemptPrefix(),
    },
  });
  return items.map(stripAttempt);
}

/** AP-N6: a task's most recent attempts, newest first (one Query per gsi1 shard, merged). */
export async function listRecentAttemptsOfTask(taskId: number, limit = 50): Promise<AttemptRecord[]> {
  const pages = await Promise.all(
    Array.from({ length: NOTIFY_TASK_SHARDS }, (_, shard) =>
      db().send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :pk',
          ExpressionAttributeValues: { ':pk': keys.notifyAttemptsOfTask(taskId, shard) },
          ScanIndexForward: false,
          Limit: limit,
        }),
      ),
    ),
  );
  return pages
    .flatMap((p) => p.Items ?? [])
    .sort((a, b) => String(b.gsi1sk).localeCompare(String(a.gsi1sk)))
    .slice(0, limit)
    .map(stripAttempt);
}

/**
 * AP-N7: take one send slot of a robot for the current minute: at most `limit` per minute and none
 * while the robot is blocked. One conditional update in the common case (same minute); when the
 * minute rolled over (or the item is new) a second one starts the minute, and if a concurrent sender
 * started it first, the increment is tried once more. False = throttled (the minute's budget is spent
 * or the robot is blocked).
 */
export async function takeRobotSlot(
  robotId: string,
  minute: number,
  limit: number,
  now: number,
): Promise<boolean> {
  const common = {
    TableName: tableName(),
    Key: keys.robotRate(robotId),
    ExpressionAttributeNames: { '#m': 'minute', '#c': 'sent', '#ttl': 'ttl' },
  };
  const notBlocked = '(attribute_not_exists(blocked_until) OR blocked_until <= :now)';
  const increment = () =>
    db().send(
      new UpdateCommand({
        ...common,
        UpdateExpression: 'SET #c = #c + :one, #ttl = :ttl',
        ConditionExpression: `#m = :m AND #c < :limit AND ${notBlocked}`,
        ExpressionAttributeValues: {
          ':one': 1,
          ':m': minute,
          ':limit': limit,
          ':now': now,
          ':ttl': now + DAY,
        },
      }),
    );
  const startMinute = () =>
    db().send(
      new UpdateCommand({
        ...common,
        UpdateExpression: 'SET #m = :m, #c = :one, entity = :e, schema_version = :v, #ttl = :ttl',
        ConditionExpression: `(attribute_not_exists(#m) OR #m < :m) AND ${notBlocked}`,
        ExpressionAttributeValues: {
          ':one': 1,
          ':m': minute,
          ':now': now,
          ':ttl': now + DAY,
          ':e': 'robot_rate',
          ':v': SCHEMA_VERSION,
        },
      }),
    );
  for (const attempt of [increment, startMinute, increment]) {
    try {
      await attempt();
      return true;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
  return false;
}

/** AP-N8: block a robot until `until` (it answered with its provider's rate-limit code). */
export async function blockRobot(robotId: string, until: number, now: number): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.robotRate(robotId),
      UpdateExpression: 'SET blocked_until = :until, entity = :e, schema_version = :v, #ttl = :ttl',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':until': until,
        ':e': 'robot_rate',
        ':v': SCHEMA_VERSION,
        ':ttl': now + DAY,
      },
    }),
  );
}
