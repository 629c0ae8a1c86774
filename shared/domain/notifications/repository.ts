import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  db,
  fromItem,
  getItems,
  isConditionFailure,
  putItems,
  queryAll,
  SCHEMA_VERSION,
  tableName,
} from '../../db/client.ts';
import { keys, NOTIFY_TASK_SHARDS, shardOf } from '../../db/keys.ts';
import type { NotifyScene } from '../../contracts/messages.ts';
import type { StoredMessage } from './channel-message.ts';
import type { OncallAnswer } from '../schedules/model.ts';
import type { NotifyChannel } from '../tasks/templates.ts';

/**
 * The only DynamoDB code of the notification module: a job's state and attempts (one item per job,
 * one write per delivery run), and the per-robot rate items. See shared/db/KEY-DESIGN.md (AP-N).
 */

/** Outcome of one attempt. `failed`, `throttled` and `rate_limited` are retried; the others are final. */
export type NotifyOutcome = 'delivered' | 'failed' | 'rejected' | 'skipped' | 'throttled' | 'rate_limited';

export interface AttemptRecord {
  job_id: string;
  task_id: number;
  channel: NotifyChannel;
  scene: NotifyScene;
  /** Who or what was addressed, secrets masked (robot token, e-mail, phone). */
  target: string;
  outcome: NotifyOutcome;
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
  /** Delivery runs so far (two copies of a message run at once count two). */
  runs: number;
  /** The attempt number of the latest run recorded (absent: recorded before runs kept it). */
  last_attempt?: number;
  /** The attempt after which the job was put in the dead-letter queue (the latest time). */
  dead_after?: number;
  updated_at: number;
}

/** Days attempts and job states are kept. */
export const ATTEMPT_TTL_DAYS = 30;
const DAY = 86_400;
/** Attempts of one run kept in the job item; a larger fan-out stores the rest as items of their own. */
const ATTEMPTS_IN_JOB = 100;

function jobStateOf(item: Record<string, unknown>): JobState {
  return {
    job_id: item.job_id as string,
    task_id: item.task_id as number,
    status: item.status as JobStatus,
    done: (item.done as string[] | undefined) ?? [],
    runs: (item.runs as number | undefined) ?? 0,
    ...(typeof item.last_attempt === 'number' ? { last_attempt: item.last_attempt } : {}),
    ...(typeof item.dead_after === 'number' ? { dead_after: item.dead_after } : {}),
    updated_at: item.updated_at as number,
  };
}

/** AP-N1: a job's state (read only when its message comes back, or comes from a producer's replay). */
export async function getJobState(jobId: string): Promise<JobState | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.notifyJob(jobId), ConsistentRead: true }),
  );
  return out.Item ? jobStateOf(out.Item) : undefined;
}

/** The stored form of an attempt in a job item (the job's own fields are on the item). */
type StoredAttempt = Omit<AttemptRecord, 'job_id' | 'task_id' | 'channel' | 'scene' | 'ttl'>;

const stored = (a: AttemptRecord): StoredAttempt => {
  const { job_id: _j, task_id: _t, channel: _c, scene: _s, ttl: _ttl, ...rest } = a;
  return rest;
};

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

export interface JobRun {
  job_id: string;
  task_id: number;
  channel: NotifyChannel;
  scene: NotifyScene;
  status: JobStatus;
  done: string[];
  attempts: AttemptRecord[];
  /** The rendered message as the channel sends it; kept from the job's first run that rendered one. */
  message?: StoredMessage;
  /** The schedules' answers the job's people came from (kept from its first run). */
  oncall?: OncallAnswer[];
  /** The run's attempt number (its job's `attempts_before` and the message's receive count). */
  attempt: number;
  at_ms: number;
}

/**
 * AP-N2: record one delivery run of a job, in one write: its state (final status, or pending for
 * the retry, and the targets served), the run's attempts appended to the job's list and, when the
 * job has none yet, the message the run rendered (at most 2 KB: `channel-message.storedMessage`). A fan-out
 * of more than ATTEMPTS_IN_JOB targets in one run keeps the rest as attempt items of their own
 * (BatchWriteItem), so an item never nears DynamoDB's size limit.
 */
export async function recordJobRun(run: JobRun): Promise<void> {
  const now = Math.floor(run.at_ms / 1000);
  const inline = run.attempts.slice(0, ATTEMPTS_IN_JOB);
  const overflow = run.attempts.slice(ATTEMPTS_IN_JOB);
  const shard = shardOf(run.job_id, NOTIFY_TASK_SHARDS);
  await Promise.all([
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.notifyJob(run.job_id),
        UpdateExpression:
          'SET entity = :e, schema_version = :v, job_id = :j, task_id = :t, channel = :c, scene = :sc, ' +
          '#s = :s, done = :done, last_attempt = :a, updated_at = :now, #ttl = :ttl, gsi1pk = :gpk, gsi1sk = :gsk, ' +
          'attempts = list_append(if_not_exists(attempts, :empty), :new)' +
          (run.message ? ', #msg = if_not_exists(#msg, :msg)' : '') +
          (run.oncall ? ', oncall = if_not_exists(oncall, :oncall)' : '') +
          ' ADD runs :one',
        ExpressionAttributeNames: {
          '#s': 'status',
          '#ttl': 'ttl',
          ...(run.message ? { '#msg': 'message' } : {}),
        },
        ExpressionAttributeValues: {
          ':e': 'notify_job',
          ':v': SCHEMA_VERSION,
          ':j': run.job_id,
          ':t': run.task_id,
          ':c': run.channel,
          ':sc': run.scene,
          ':s': run.status,
          ':done': run.done,
          ':now': now,
          ':ttl': now + ATTEMPT_TTL_DAYS * DAY,
          ':gpk': keys.notifyAttemptsOfTask(run.task_id, shard),
          ':gsk': keys.notifyJobOfTaskSk(run.at_ms, run.job_id),
          ':empty': [],
          ':new': inline.map(stored),
          ':one': 1,
          ':a': run.attempt,
          ...(run.message ? { ':msg': run.message } : {}),
          ...(run.oncall ? { ':oncall': run.oncall } : {}),
        },
      }),
    ),
    overflow.length > 0 ? putItems(overflow.map(attemptItem), 'notification attempts') : undefined,
  ]);
}

/**
 * AP-N2 (mark): a job put in the dead-letter queue after attempt `attempt` says so on its item, so
 * that a copy of the message that put it there, received again, does not put it there twice. Only
 * on a job item that exists (a job dead-lettered has recorded its retries there).
 */
export async function markJobDeadLettered(jobId: string, attempt: number): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.notifyJob(jobId),
        UpdateExpression: 'SET dead_after = :a',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':a': attempt },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** Every attempt an item holds: a job item's list, or an attempt item of a large fan-out. */
function attemptsOf(item: Record<string, unknown>): AttemptRecord[] {
  if (item.entity !== 'notify_job') return [fromItem<AttemptRecord>(item)];
  const common = {
    job_id: item.job_id as string,
    task_id: item.task_id as number,
    channel: item.channel as NotifyChannel,
    scene: item.scene as NotifyScene,
    ttl: item.ttl as number,
  };
  return ((item.attempts as StoredAttempt[] | undefined) ?? []).map((a) => ({ ...common, ...a }));
}

const byTime = (a: AttemptRecord, b: AttemptRecord) => a.at_ms - b.at_ms || a.seq - b.seq;

/** AP-N3: the attempts of one job, oldest first (one Query of the job's partition). */
export async function listAttemptsOfJob(jobId: string): Promise<AttemptRecord[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.notifyJobPartition(jobId) },
    ConsistentRead: true,
  });
  return items.flatMap(attemptsOf).sort(byTime);
}

/** AP-N4 (job items): a task's most recent attempts of its job items, newest first (one Query per shard). */
export async function listRecentJobAttemptsOfTask(taskId: number, limit = 50): Promise<AttemptRecord[]> {
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
    .flatMap((p) => (p.Items ?? []).flatMap(attemptsOf))
    .sort((a, b) => byTime(b, a))
    .slice(0, limit);
}

/** Conditional writes lost to other containers before a robot's lease gives up. */
const ROBOT_LEASE_ATTEMPTS = 4;

/** A number the failed condition returned (raw attribute values: errors are not unmarshalled). */
function numberOf(item: unknown, attribute: string): number | undefined {
  const v = (item as Record<string, unknown> | undefined)?.[attribute];
  if (typeof v === 'number') return v;
  const n = (v as { N?: string } | undefined)?.N;
  return n === undefined ? undefined : Number(n);
}

/**
 * AP-N5: lease up to `want` send slots of a robot for the current minute: at most `limit` per minute
 * across every container, and none while the robot is blocked. One conditional update in the common
 * case (`sent <= limit - want` in the same minute); when it fails the condition returns the item
 * (`ReturnValuesOnConditionCheckFailure`, no read) and tells what is left: the rest of the minute's
 * budget is leased the same way, a new minute is started (`minute < :m`), or nothing (spent, or
 * blocked). Returns the slots granted (0: throttled).
 */
export async function leaseRobotSlots(
  robotId: string,
  minute: number,
  want: number,
  limit: number,
  now: number,
): Promise<number> {
  const common = {
    TableName: tableName(),
    Key: keys.robotRate(robotId),
    ExpressionAttributeNames: { '#m': 'minute', '#c': 'sent', '#ttl': 'ttl' },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
  const notBlocked = '(attribute_not_exists(blocked_until) OR blocked_until <= :now)';
  const increment = (n: number) =>
    db().send(
      new UpdateCommand({
        ...common,
        UpdateExpression: 'SET #c = #c + :n, #ttl = :ttl',
        ConditionExpression: `#m = :m AND #c <= :room AND ${notBlocked}`,
        ExpressionAttributeValues: {
          ':n': n,
          ':m': minute,
          ':room': limit - n,
          ':now': now,
          ':ttl': now + DAY,
        },
      }),
    );
  const startMinute = (n: number) =>
    db().send(
      new UpdateCommand({
        ...common,
        UpdateExpression: 'SET #m = :m, #c = :n, entity = :e, schema_version = :v, #ttl = :ttl',
        ConditionExpression: `(attribute_not_exists(#m) OR #m < :m) AND ${notBlocked}`,
        ExpressionAttributeValues: {
          ':n': n,
          ':m': minute,
          ':now': now,
          ':ttl': now + DAY,
          ':e': 'robot_rate',
          ':v': SCHEMA_VERSION,
        },
      }),
    );
  let take = Math.min(want, limit);
  let fresh = false;
  for (let attempt = 0; attempt < ROBOT_LEASE_ATTEMPTS && take > 0; attempt++) {
    try {
      await (fresh ? startMinute(take) : increment(take));
      return take;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const item = (err as { Item?: unknown }).Item;
      if ((numberOf(item, 'blocked_until') ?? 0) > now) return 0;
      const at = numberOf(item, 'minute');
      fresh = at === undefined || at < minute;
      if (!fresh) take = Math.min(take, limit - (numberOf(item, 'sent') ?? 0));
    }
  }
  return 0;
}

/** AP-N6: block a robot until `until` (it answered with its provider's rate-limit code). */
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

/** A position in one gsi1 shard of a task's attempts (AP-N7): an index item and its attempts read. */
export interface NotifyAttemptsPosition {
  sk: string;
  /** Attempts of that item already read (newest first). */
  read: number;
}

export interface PagedNotifyAttempt {
  attempt: AttemptRecord;
  /** Milliseconds the shard is sorted by: the job's last run, or the attempt's time (large fan-outs). */
  orderMs: number;
  after: NotifyAttemptsPosition;
}

/**
 * AP-N7: one shard of a task's attempts, newest job (by its last run) first and each job's attempts
 * newest first, from just after `after`: Query gsi1 `TASKNOTIFY#<task id>#<shard>` descending
 * (`gsi1sk <= after.sk`), until `limit` attempts.
 */
export async function pageAttemptsOfTaskShard(
  taskId: number,
  shard: number,
  limit: number,
  after?: NotifyAttemptsPosition,
): Promise<{ rows: PagedNotifyAttempt[]; done: boolean }> {
  const rows: PagedNotifyAttempt[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: 'gsi1',
        KeyConditionExpression: after ? 'gsi1pk = :pk AND gsi1sk <= :sk' : 'gsi1pk = :pk',
        ExpressionAttributeValues: {
          ':pk': keys.notifyAttemptsOfTask(taskId, shard),
          ...(after ? { ':sk': after.sk } : {}),
        },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const sk = item.gsi1sk as string;
      const attempts = attemptsOf(item).sort((a, b) => byTime(b, a));
      const from = after && sk === after.sk ? after.read : 0;
      for (let i = from; i < attempts.length; i++) {
        rows.push({ attempt: attempts[i], orderMs: Number(sk.slice(0, 13)), after: { sk, read: i + 1 } });
        if (rows.length >= limit) return { rows, done: false };
      }
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return { rows, done: true };
}

/** A job with its state, its rendered message and every attempt. */
export interface JobRecord extends JobState {
  channel: NotifyChannel;
  scene: NotifyScene;
  message?: StoredMessage;
  oncall?: OncallAnswer[];
  attempts: AttemptRecord[];
}

/**
 * AP-N8: the jobs among `jobIds` that exist, each with every attempt (an alarm's trace): one
 * BatchGetItem of the job items, then AP-N3 (one Query) for each job found.
 */
export async function getJobsWithAttempts(jobIds: string[]): Promise<JobRecord[]> {
  if (jobIds.length === 0) return [];
  const found = await getItems(
    jobIds.map((id) => keys.notifyJob(id)),
    { what: 'notification jobs' },
  );
  const byId = new Map(found.map((item) => [item.job_id as string, item]));
  const existing = jobIds.filter((id) => byId.has(id));
  const attempts = await Promise.all(existing.map((id) => listAttemptsOfJob(id)));
  return existing.map((id, i) => {
    const item = byId.get(id) as Record<string, unknown>;
    return {
      ...jobStateOf(item),
      channel: item.channel as NotifyChannel,
      scene: item.scene as NotifyScene,
      ...(item.message ? { message: item.message as StoredMessage } : {}),
      ...(item.oncall ? { oncall: item.oncall as OncallAnswer[] } : {}),
      attempts: attempts[i],
    };
  });
}
