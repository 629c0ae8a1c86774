import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
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
}

function itemKey(d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>) {
  return keys.due(shardOf(`${d.kind}#${d.ref}`, DUE_SHARDS), d.due_at, d.kind, d.ref);
}

/** AP: schedule due work (idempotent: the same kind, ref and time is one item). */
export async function putDue(d: DueItem): Promise<void> {
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        kind: d.kind,
        ref: d.ref,
        due_at: d.due_at,
        payload: d.payload,
        attempts: d.attempts,
        entity: 'due',
        schema_version: SCHEMA_VERSION,
        ...itemKey(d),
      },
    }),
  );
}

/** AP: cancel scheduled work (no error when it already ran or never existed). */
export async function deleteDue(d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>): Promise<void> {
  await db().send(new DeleteCommand({ TableName: tableName(), Key: itemKey(d) }));
}

/** AP: the work due by `now` on one shard, oldest first. */
export async function queryDue(shard: number, now: number, limit = 100): Promise<DueItem[]> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk <= :until',
      ExpressionAttributeValues: { ':pk': keys.dueShard(shard), ':until': keys.dueUntil(now) },
      Limit: limit,
    }),
  );
  return (out.Items ?? []).map((i) => ({
    kind: i.kind,
    ref: i.ref,
    due_at: i.due_at,
    payload: i.payload ?? {},
    attempts: i.attempts,
  }));
}

/**
 * AP: claim due work by deleting it under a condition. Exactly one of several concurrent runners
 * gets `true`; the others skip the item.
 */
export async function claimDue(d: DueItem): Promise<boolean> {
  try {
    await db().send(
      new DeleteCommand({ TableName: tableName(), Key: itemKey(d), ConditionExpression: 'attribute_exists(pk)' }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}
