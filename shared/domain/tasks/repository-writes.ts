import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  db,
  isConditionFailure,
  SCHEMA_VERSION,
  tableName,
  type TransactItem,
  transactionConditionFailed,
} from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { referenceWrites } from '../schedules/repository.ts';
import type { Task } from './model.ts';
import { referencedScheduleIds } from './references.ts';
import { type PermissionItem, permissionItem, toTaskItem } from './repository.ts';

/** Task API writes (AP-T3 ... AP-T10). Every multi-item change is one TransactWriteItems. */

/**
 * Outcome of a conditional task write: `stale` = the task changed (or vanished) since it was read;
 * `schedule-gone` = a schedule its receivers name no longer exists.
 */
export type TaskWriteResult = 'ok' | 'name-taken' | 'stale' | 'schedule-gone';

/** DynamoDB's limit of items in one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;

/** Task ids start above this base (the first task gets 100001, like the legacy system's ids). */
const TASK_ID_BASE = 100_000;

/** AP-T3: allocate a task id (atomic counter, UpdateItem ADD). */
export async function allocateTaskId(): Promise<number> {
  const out = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.counter('task'),
      UpdateExpression: 'SET #v = if_not_exists(#v, :base) + :one, entity = :e, schema_version = :sv',
      ExpressionAttributeNames: { '#v': 'value' },
      ExpressionAttributeValues: { ':base': TASK_ID_BASE, ':one': 1, ':e': 'counter', ':sv': SCHEMA_VERSION },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.value);
}

function taskNameItem(name: string, taskId: number) {
  return { ...keys.taskName(name), entity: 'task_name', schema_version: SCHEMA_VERSION, task_id: taskId };
}

function permissionWrites(
  taskId: number,
  prev: { rw: number[]; ro: number[] },
  next: { rw: number[]; ro: number[] },
): TransactItem[] {
  const access = (p: { rw: number[]; ro: number[] }) =>
    new Map<number, 'rw' | 'ro'>([
      ...p.ro.map((u) => [u, 'ro'] as const),
      ...p.rw.map((u) => [u, 'rw'] as const),
    ]);
  const before = access(prev);
  const after = access(next);
  const writes: TransactItem[] = [];
  for (const [uid, a] of after) {
    if (before.get(uid) !== a) {
      writes.push({
        Put: { TableName: tableName(), Item: permissionItem({ task_id: taskId, uid, access: a }) },
      });
    }
  }
  for (const uid of before.keys()) {
    if (!after.has(uid))
      writes.push({ Delete: { TableName: tableName(), Key: keys.taskPermission(taskId, uid) } });
  }
  return writes;
}

/** Number of permission items a change from `prev` to `next` writes (to respect the transaction limit). */
export function permissionWriteCount(
  prev: { rw: number[]; ro: number[] },
  next: { rw: number[]; ro: number[] },
) {
  return permissionWrites(0, prev, next).length;
}

function isTransactionConflict(err: unknown): boolean {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | null;
  if (e?.name === 'TransactionConflictException') return true;
  return (
    e?.name === 'TransactionCanceledException' &&
    (e.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict')
  );
}

/**
 * The schedule reference index entries of a change of receivers (schedules/repository.ts
 * referenceWrites): their count in the transaction size.
 */
export function referenceWriteCount(
  prev: Pick<Task, 'receiver' | 'workflow' | 'upgrade'> | undefined,
  next: Pick<Task, 'receiver' | 'workflow' | 'upgrade'>,
): number {
  const before = prev ? referencedScheduleIds(prev) : [];
  const after = referencedScheduleIds(next);
  // Two per schedule named or no longer named: its reference item and its count.
  return (
    2 * (after.filter((s) => !before.includes(s)).length + before.filter((s) => !after.includes(s)).length)
  );
}

async function transact(items: TransactItem[], nameIndex: number | undefined): Promise<TaskWriteResult> {
  try {
    await db().send(new TransactWriteCommand({ TransactItems: items }));
    return 'ok';
  } catch (err) {
    const failed = transactionConditionFailed(err);
    if (nameIndex !== undefined && failed.includes(nameIndex)) return 'name-taken';
    if (failed.some((i) => String(items[i]?.Update?.Key?.pk).startsWith('SCHEDULE#'))) return 'schedule-gone';
    if (failed.length > 0 || isTransactionConflict(err)) return 'stale';
    throw err;
  }
}

/**
 * AP-T4: create a task: the task item, its TASKNAME guard, its permission items and the reference
 * index entries of the schedules its receivers name (AP-O10) in one
 * transaction. `name-taken` when another task holds the name.
 */
export async function createTaskItems(task: Task): Promise<TaskWriteResult> {
  const items: TransactItem[] = [
    {
      Put: {
        TableName: tableName(),
        Item: toTaskItem(task),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: tableName(),
        Item: taskNameItem(task.name, task.id),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    ...permissionWrites(task.id, { rw: [], ro: [] }, task.permission),
    ...referenceWrites(task.id, [], referencedScheduleIds(task)),
  ];
  return transact(items, 1);
}

/**
 * AP-T5: replace a task (update, updatefields) under `version = prev.version`: schedule references
 * are diffed like permissions; a rename swaps the
 * TASKNAME guards, permission items are diffed. `stale` when the task changed since it was read.
 */
export async function replaceTaskItems(prev: Task, next: Task): Promise<TaskWriteResult> {
  const items: TransactItem[] = [
    {
      Put: {
        TableName: tableName(),
        Item: toTaskItem(next),
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': prev.version },
      },
    },
  ];
  let nameIndex: number | undefined;
  if (prev.name !== next.name) {
    items.push({
      Delete: {
        TableName: tableName(),
        Key: keys.taskName(prev.name),
        ConditionExpression: 'attribute_not_exists(pk) OR task_id = :id',
        ExpressionAttributeValues: { ':id': prev.id },
      },
    });
    nameIndex = items.length;
    items.push({
      Put: {
        TableName: tableName(),
        Item: taskNameItem(next.name, next.id),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    });
  }
  items.push(...permissionWrites(prev.id, prev.permission, next.permission));
  items.push(...referenceWrites(prev.id, referencedScheduleIds(prev), referencedScheduleIds(next)));
  return transact(items, nameIndex);
}

/**
 * AP-T7: delete a task, its TASKNAME guard, the given permission items and its schedule references
 * under `version`.
 */
export async function deleteTaskItems(task: Task, permissions: PermissionItem[]): Promise<TaskWriteResult> {
  const items: TransactItem[] = [
    {
      Delete: {
        TableName: tableName(),
        Key: keys.task(task.id),
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': task.version },
      },
    },
    {
      Delete: {
        TableName: tableName(),
        Key: keys.taskName(task.name),
        ConditionExpression: 'attribute_not_exists(pk) OR task_id = :id',
        ExpressionAttributeValues: { ':id': task.id },
      },
    },
    ...permissions.map((p) => ({
      Delete: { TableName: tableName(), Key: keys.taskPermission(task.id, p.uid) },
    })),
    // The heartbeat state and the intake token, if the task ever had them.
    { Delete: { TableName: tableName(), Key: keys.taskHeartbeat(task.id) } },
    { Delete: { TableName: tableName(), Key: keys.taskIntake(task.id) } },
    ...referenceWrites(task.id, referencedScheduleIds(task), []),
  ];
  return transact(items, undefined);
}

/**
 * AP-T8: set a task's status (stop, start, pause) under `version = :v`; `paused_until` is set for
 * a pause and removed otherwise. False when the task changed since it was read.
 */
export async function updateTaskStatus(
  task: Task,
  change: { status: number; paused_until?: number },
  now: number,
): Promise<boolean> {
  const pause = change.paused_until !== undefined;
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(task.id),
        UpdateExpression: `SET #s = :s, updated_at = :now, version = version + :one${pause ? ', paused_until = :pu' : ''}${
          pause ? '' : ' REMOVE paused_until'
        }`,
        ConditionExpression: 'version = :v',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: {
          ':s': change.status,
          ':now': now,
          ':one': 1,
          ':v': task.version,
          ...(pause ? { ':pu': change.paused_until } : {}),
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * AP-T9: end a pause: status 1 only while the task is still paused until exactly `pausedUntil`
 * (a later pause, a stop or a start in between wins). False when that no longer holds.
 */
export async function resumePausedTask(taskId: number, pausedUntil: number, now: number): Promise<boolean> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(taskId),
        UpdateExpression:
          'SET #s = :running, updated_at = :now, version = version + :one REMOVE paused_until',
        ConditionExpression: '#s = :paused AND paused_until = :pu',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: {
          ':running': 1,
          ':paused': 2,
          ':pu': pausedUntil,
          ':now': now,
          ':one': 1,
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * AP-T10: set (or, with `undefined`, remove) one of a task's own settings — its intake token hash,
 * its heartbeat, its alarm rate limit, its alarm retention — under `version = :v`. False when the task changed since it was read.
 */
export async function setTaskSetting(
  task: Task,
  name: 'intake_hash' | 'intake_fixed_sign' | 'heartbeat' | 'rate_limit' | 'alarm_retention_days',
  value: unknown,
  now: number,
): Promise<boolean> {
  const set = value !== undefined;
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(task.id),
        UpdateExpression: `SET updated_at = :now, version = version + :one${set ? ', #n = :val' : ' REMOVE #n'}`,
        ConditionExpression: 'version = :v',
        ExpressionAttributeNames: { '#n': name },
        ExpressionAttributeValues: {
          ':now': now,
          ':one': 1,
          ':v': task.version,
          ...(set ? { ':val': value } : {}),
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * AP-T16: a task's intake token item, read strongly consistent on every use (never cached): its
 * hash, '' once revoked; undefined when the task never had one written there.
 */
export async function getIntakeHash(taskId: number): Promise<{ hash: string } | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.taskIntake(taskId), ConsistentRead: true }),
  );
  return out.Item ? { hash: String(out.Item.hash ?? '') } : undefined;
}

/** AP-T17: set a task's intake token hash ('' or undefined: none; the old one stops working at once). */
export async function putIntakeHash(taskId: number, hash: string | undefined): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.taskIntake(taskId),
      UpdateExpression: 'SET entity = :e, schema_version = :v, task_id = :t, #h = :h',
      ExpressionAttributeNames: { '#h': 'hash' },
      ExpressionAttributeValues: {
        ':e': 'task_intake',
        ':v': SCHEMA_VERSION,
        ':t': taskId,
        ':h': hash ?? '',
      },
    }),
  );
}
