import { randomUUID } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  db,
  isConditionFailure,
  runStatements,
  SCHEMA_VERSION,
  type Statement,
  tableName,
  transactionConditionFailed,
} from '../../db/client.ts';
import { DUE_SHARDS, keys, shardOf } from '../../db/keys.ts';

/** A unit of work due at a time: a delayed flush, a delay recovery, a reminder, a pause expiry. */
export interface DueItem {
  kind: string;
  /** What the work is about (unique per kind and due time), e.g. a workflow id. */
  ref: string;
  /** Unix seconds. */
  due_at: number;
  payload: Record<string, unknown>;
  /** Failed runs so far. */
  attempts?: number;
  /** While a runner holds the item (or a failed item waits for its retry): Unix seconds. */
  leased_until?: number;
}

/** A due item a runner holds, with the token of its lease (it travels with the item on the due queue). */
export interface LeasedDue extends DueItem {
  token: string;
}

/** The key of a due item (its shard from a hash of kind and ref). */
export function dueKey(d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>) {
  return keys.due(shardOf(`${d.kind}#${d.ref}`, DUE_SHARDS), d.due_at, d.kind, d.ref);
}

function toDueItem(i: Record<string, unknown>): DueItem {
  return {
    kind: i.kind as string,
    ref: i.ref as string,
    due_at: i.due_at as number,
    payload: (i.payload as Record<string, unknown>) ?? {},
    attempts: i.attempts as number | undefined,
    leased_until: i.leased_until as number | undefined,
  };
}

/** AP-W1: schedule due work (idempotent: the same kind, ref and time is one item). */
/** The stored form of due work: what putDue writes, and what a transaction puts with other items. */
export function dueRecord(d: DueItem): Record<string, unknown> {
  return {
    kind: d.kind,
    ref: d.ref,
    due_at: d.due_at,
    payload: d.payload,
    attempts: d.attempts,
    entity: 'due',
    schema_version: SCHEMA_VERSION,
    ...dueKey(d),
  };
}

export async function putDue(d: DueItem): Promise<void> {
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: dueRecord(d),
    }),
  );
}

/** AP-W2: cancel scheduled work (no error when it already ran or never existed). */
export async function deleteDue(d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>): Promise<void> {
  await db().send(new DeleteCommand({ TableName: tableName(), Key: dueKey(d) }));
}

/**
 * AP-W3: one page of the work due by `now` on one shard, oldest first (leased items included), from
 * just after `startKey` (the last key of the page before).
 */
export async function queryDuePage(
  shard: number,
  now: number,
  limit = 100,
  startKey?: Record<string, unknown>,
): Promise<{ items: DueItem[]; next?: Record<string, unknown>; last?: Record<string, unknown> }> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk <= :until',
      ExpressionAttributeValues: { ':pk': keys.dueShard(shard), ':until': keys.dueUntil(now) },
      Limit: limit,
      ExclusiveStartKey: startKey,
    }),
  );
  const items = out.Items ?? [];
  const tail = items.at(-1);
  return {
    items: items.map(toDueItem),
    next: out.LastEvaluatedKey,
    last: tail ? { pk: tail.pk, sk: tail.sk } : undefined,
  };
}

/** The work due by `now` on one shard (first page). */
export async function queryDue(shard: number, now: number, limit = 100): Promise<DueItem[]> {
  return (await queryDuePage(shard, now, limit)).items;
}

/** AP-W3 (next): when the first item due after `now` on one shard falls due (Unix seconds), if any. */
export async function nextDueAt(shard: number, now: number): Promise<number | undefined> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: { ':pk': keys.dueShard(shard), ':after': keys.dueUntil(now) },
      ProjectionExpression: 'due_at',
      Limit: 1,
    }),
  );
  const first = out.Items?.[0];
  return first ? (first.due_at as number) : undefined;
}

/**
 * AP-W4: lease due work. Exactly one of several concurrent runners gets a lease token; the item stays
 * in place until its work is done, so a runner that dies mid-way loses nothing: the lease expires
 * and another runner takes the item over (handlers are idempotent per item).
 */
export async function leaseDue(d: DueItem, now: number, seconds: number): Promise<string | undefined> {
  const token = randomUUID();
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: dueKey(d),
        UpdateExpression: 'SET leased_until = :until, lease_token = :token',
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(leased_until) OR leased_until <= :now)',
        ExpressionAttributeValues: { ':until': now + seconds, ':token': token, ':now': now },
      }),
    );
    return token;
  } catch (err) {
    if (isConditionFailure(err)) return undefined;
    throw err;
  }
}

/**
 * AP-W4 (batch): lease due items for a runner: a conditional PartiQL UPDATE each (the item exists and
 * is not leased, or its lease has passed), 25 per call. Returns the items leased, each with the lease
 * token; the others are held by another runner or gone.
 */
export async function leaseDueItems(items: DueItem[], now: number, seconds: number): Promise<LeasedDue[]> {
  const leased = items.map((d) => ({ ...d, token: randomUUID(), leased_until: now + seconds }));
  const codes = await runStatements(
    leased.map(
      (d): Statement => ({
        Statement: `UPDATE "${tableName()}" SET leased_until = ? SET lease_token = ? WHERE pk = ? AND sk = ? AND kind IS NOT MISSING AND (leased_until IS MISSING OR leased_until <= ?)`,
        Parameters: [d.leased_until, d.token, dueKey(d).pk, dueKey(d).sk, now],
      }),
    ),
    'due work leases',
  );
  return leased.filter((_, i) => {
    if (codes[i] && codes[i] !== 'ConditionalCheckFailed')
      throw new Error(`due work lease failed: ${codes[i]}`);
    return !codes[i];
  });
}

/**
 * AP-W5 (batch): done — remove the items, each unless another runner has taken it over since (a
 * conditional PartiQL DELETE on its lease token), 25 per call.
 */
export async function completeDueItems(items: LeasedDue[]): Promise<void> {
  const codes = await runStatements(
    items.map(
      (d): Statement => ({
        Statement: `DELETE FROM "${tableName()}" WHERE pk = ? AND sk = ? AND lease_token = ?`,
        Parameters: [dueKey(d).pk, dueKey(d).sk, d.token],
      }),
    ),
    'due work done',
  );
  const failed = codes.find((c) => c && c !== 'ConditionalCheckFailed');
  if (failed) throw new Error(`due work completion failed: ${failed}`);
}

/** AP-W5: done — remove the item, unless another runner has taken it over since. */
export async function completeDue(d: DueItem, token: string): Promise<void> {
  try {
    await db().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: dueKey(d),
        ConditionExpression: 'lease_token = :token',
        ExpressionAttributeValues: { ':token': token },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** AP-W6: failed — count the attempt and keep the item leased until its retry time. */
export async function retryDue(d: DueItem, token: string, attempts: number, retryAt: number): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: dueKey(d),
        UpdateExpression: 'SET attempts = :a, leased_until = :retry',
        ConditionExpression: 'lease_token = :token',
        ExpressionAttributeValues: { ':a': attempts, ':retry': retryAt, ':token': token },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** AP-W7: out of attempts — keep the work for an operator under `DUEDEAD#<kind>`, then remove it. */
export async function buryDue(d: DueItem, token: string, error: string, now: number): Promise<void> {
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.dueDead(d.kind, d.due_at, d.ref),
        entity: 'due_dead',
        schema_version: SCHEMA_VERSION,
        kind: d.kind,
        ref: d.ref,
        due_at: d.due_at,
        payload: d.payload,
        attempts: d.attempts,
        error,
        buried_at: now,
      },
    }),
  );
  await completeDue(d, token);
}

/** Due work kept for an operator after its last failed attempt (`DUEDEAD#<kind>`). */
export interface DeadDueItem extends DueItem {
  error: string;
  /** Unix seconds it was buried. */
  buried_at: number;
}

/**
 * AP-W8: the dead due work of one kind, newest due time first: Query `DUEDEAD#<kind>` descending
 * (all pages until `limit`); with `taskId`, only items whose payload names that task.
 */
export async function listDeadDue(kind: string, limit: number, taskId?: number): Promise<DeadDueItem[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ...(taskId !== undefined
          ? {
              FilterExpression: '#p.task_id = :t',
              ExpressionAttributeNames: { '#p': 'payload' },
              ExpressionAttributeValues: { ':pk': keys.dueDeadKind(kind), ':t': taskId },
            }
          : { ExpressionAttributeValues: { ':pk': keys.dueDeadKind(kind) } }),
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start && items.length < limit);
  return items.slice(0, limit).map((i) => ({
    ...toDueItem(i),
    error: (i.error as string | undefined) ?? '',
    buried_at: (i.buried_at as number | undefined) ?? 0,
  }));
}

/**
 * AP-W9: give dead due work another run: in one transaction, put it back as due at `now` with no
 * attempts counted and delete the dead item, so a revive happens once however often it is asked
 * for (a second due item would run the work twice, e.g. apply a workflow announcement's counts
 * again). False when the dead item is gone (revived by someone else meanwhile).
 */
export async function reviveDeadDue(
  d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>,
  now: number,
): Promise<boolean> {
  const out = await db().send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.dueDead(d.kind, d.due_at, d.ref),
      ConsistentRead: true,
    }),
  );
  if (!out.Item) return false;
  const dead = toDueItem(out.Item);
  const revived: DueItem = {
    kind: dead.kind,
    ref: dead.ref,
    due_at: now,
    payload: dead.payload,
    attempts: 0,
  };
  try {
    await db().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName(),
              Item: dueRecord(revived),
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Delete: {
              TableName: tableName(),
              Key: keys.dueDead(d.kind, d.due_at, d.ref),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        ],
      }),
    );
  } catch (err) {
    if (transactionConditionFailed(err).length > 0) return false;
    throw err;
  }
  return true;
}
