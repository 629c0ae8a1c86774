import {
  GetCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  db,
  fromItem,
  getItems,
  isConditionFailure,
  queryAll,
  SCHEMA_VERSION,
  tableName,
  transactionConditionFailed,
} from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { seal, unseal } from '../auth/seal.ts';
import type { Task } from './model.ts';
import { sealTaskRobots } from '../channels/robots.ts';

/**
 * The stored form of a task: token and secret are sealed (see auth/seal.ts), and so is every robot's
 * webhook and secret in its receivers (robots.ts; a task read keeps them sealed).
 */
export interface TaskItem extends Omit<Task, 'token' | 'secret'> {
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  gsi2pk: string;
  gsi2sk: string;
  entity: 'task';
  schema_version: number;
  token_sealed: string;
  secret_sealed: string;
}

/**
 * Every Put of a task writes its listing keys (gsi1 by pinyin, gsi2 by name: keys.taskListing), so a
 * rename moves them; the UpdateItem writers (status, settings) leave them as they are.
 */
export function toTaskItem(task: Task): TaskItem {
  const { token, secret, ...rest } = task;
  return {
    ...keys.task(task.id),
    ...keys.taskListing(task),
    entity: 'task',
    schema_version: SCHEMA_VERSION,
    ...sealTaskRobots(rest),
    token_sealed: seal(token),
    secret_sealed: seal(secret),
  };
}

export function fromTaskItem(item: Record<string, unknown>): Task {
  const { token_sealed, secret_sealed, ...rest } = fromItem<Omit<TaskItem, 'pk' | 'sk'>>(item);
  return { ...rest, token: unseal(token_sealed), secret: unseal(secret_sealed) } as Task;
}

/** AP: get a task by id. */
export async function getTask(id: number, consistent = false): Promise<Task | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.task(id), ConsistentRead: consistent }),
  );
  return out.Item ? fromTaskItem(out.Item) : undefined;
}

/** A user's permission on a task (item `TASK#<id>` / `PERM#<uid>`, listed per user via gsi1). */
export interface PermissionItem {
  task_id: number;
  uid: number;
  access: 'rw' | 'ro';
}

/** AP: the tasks a user holds permissions on (profile), via gsi1 `USERPERM#<uid>`. */
export async function listPermissionsOfUser(uid: number): Promise<PermissionItem[]> {
  const items = await queryAll({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.permissionsOfUser(uid).gsi1pk },
  });
  return items.map(toPermission);
}

const toPermission = (i: Record<string, unknown>): PermissionItem => ({
  task_id: i.task_id as number,
  uid: i.uid as number,
  access: i.access as PermissionItem['access'],
});

export function permissionItem(p: PermissionItem): Record<string, unknown> {
  return {
    ...keys.taskPermission(p.task_id, p.uid),
    ...keys.taskPermissionByUser(p.uid, p.task_id),
    entity: 'permission',
    schema_version: SCHEMA_VERSION,
    ...p,
  };
}

// ---------------------------------------------------------------------------------------------
// Task API writes (AP-T3 ... AP-T9). Every multi-item change is one TransactWriteItems.

type TransactItem = NonNullable<
  ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']
>[number];

/** Outcome of a conditional task write: `stale` = the task changed (or vanished) since it was read. */
export type TaskWriteResult = 'ok' | 'name-taken' | 'stale';

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

async function transact(items: TransactItem[], nameIndex: number | undefined): Promise<TaskWriteResult> {
  try {
    await db().send(new TransactWriteCommand({ TransactItems: items }));
    return 'ok';
  } catch (err) {
    const failed = transactionConditionFailed(err);
    if (nameIndex !== undefined && failed.includes(nameIndex)) return 'name-taken';
    if (failed.length > 0 || isTransactionConflict(err)) return 'stale';
    throw err;
  }
}

/**
 * AP-T4: create a task: the task item, its TASKNAME guard and its permission items in one
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
  ];
  return transact(items, 1);
}

/**
 * AP-T5: replace a task (update, updatefields) under `version = prev.version`: a rename swaps the
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
  return transact(items, nameIndex);
}

/** AP-T6: the permission items of one task (its item collection, `sk begins_with PERM#`). */
export async function listTaskPermissions(taskId: number): Promise<PermissionItem[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :perm)',
    ExpressionAttributeValues: { ':pk': keys.task(taskId).pk, ':perm': keys.taskPermissionPrefix() },
    ConsistentRead: true,
  });
  return items.map(toPermission);
}

/** AP-T7: delete a task, its TASKNAME guard and the given permission items under `version`. */
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
    // The heartbeat state, if the task ever had one.
    { Delete: { TableName: tableName(), Key: keys.taskHeartbeat(task.id) } },
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

// ---------------------------------------------------------------------------------------------
// The task listing (GET /alarmtask/list, AP-T13 ... AP-T15).

/** The listing indexes: gsi1 sorts the tasks by lower-cased pinyin, gsi2 by lower-cased name. */
export type TaskListingIndex = 'gsi1' | 'gsi2';

/** Filters of the listing other than the prefix (behavior: `status` is the effective status). */
export interface TaskFilter {
  department_id?: number;
  status?: 0 | 1 | 2;
  tag_id?: number;
}

/** The FilterExpression of a TaskFilter (the same test as list.ts `matchesFilter`, in DynamoDB terms). */
function filterExpression(
  filter: TaskFilter,
  now: number,
): {
  FilterExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
} {
  const parts: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  if (filter.department_id !== undefined) {
    parts.push('department_id = :dept');
    values[':dept'] = filter.department_id;
  }
  if (filter.tag_id !== undefined) {
    parts.push('contains(task_tags, :tag)');
    values[':tag'] = filter.tag_id;
  }
  if (filter.status === 0) {
    names['#s'] = 'status';
    parts.push('#s = :stopped');
    values[':stopped'] = 0;
  } else if (filter.status !== undefined) {
    // A pause that has passed reads as running (effectiveStatus).
    names['#s'] = 'status';
    Object.assign(values, { ':pause': 2, ':now': now });
    if (filter.status === 1) {
      values[':run'] = 1;
      parts.push('(#s = :run OR (#s = :pause AND paused_until <= :now))');
    } else parts.push('(#s = :pause AND (attribute_not_exists(paused_until) OR paused_until > :now))');
  }
  if (parts.length === 0) return {};
  return {
    FilterExpression: parts.join(' AND '),
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: values,
  };
}

/** A listed task with the listing key it was found under (cursors are built from it). */
export interface ListedTask {
  task: Task;
  sk: string;
}

const idOfListingSk = (sk: string) => Number(sk.slice(-12));

/**
 * AP-T13: one page of the task listing, ascending: Query `TASKS` on gsi1 (pinyin) or gsi2 (name),
 * `begins_with(sk, prefix)` when given, after `after` (a listing key of the same index), the filters
 * as a FilterExpression. `evaluate` bounds the items read; `last` is the last key read when more may
 * follow.
 */
export async function queryTaskListing(input: {
  index: TaskListingIndex;
  prefix?: string;
  after?: string;
  filter: TaskFilter;
  now: number;
  evaluate: number;
}): Promise<{ tasks: ListedTask[]; last?: string }> {
  const { index, prefix, after, now, evaluate } = input;
  const pkName = `${index}pk`;
  const skName = `${index}sk`;
  const filter = filterExpression(input.filter, now);
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: index,
      KeyConditionExpression: prefix ? '#pk = :pk AND begins_with(#sk, :prefix)' : '#pk = :pk',
      ExpressionAttributeNames: {
        '#pk': pkName,
        ...(prefix ? { '#sk': skName } : {}),
        ...filter.ExpressionAttributeNames,
      },
      ExpressionAttributeValues: {
        ':pk': keys.taskListingPartition(),
        ...(prefix ? { ':prefix': prefix } : {}),
        ...filter.ExpressionAttributeValues,
      },
      ...(filter.FilterExpression ? { FilterExpression: filter.FilterExpression } : {}),
      Limit: evaluate,
      ...(after
        ? {
            ExclusiveStartKey: {
              ...keys.task(idOfListingSk(after)),
              [pkName]: keys.taskListingPartition(),
              [skName]: after,
            },
          }
        : {}),
    }),
  );
  return {
    tasks: (out.Items ?? []).map((item) => ({ task: fromTaskItem(item), sk: String(item[skName]) })),
    last: out.LastEvaluatedKey ? String(out.LastEvaluatedKey[skName]) : undefined,
  };
}

/** AP-T14: tasks by ids (BatchGetItem); missing ones are absent. */
export async function getTasks(ids: number[], consistent = false): Promise<Task[]> {
  const items = await getItems(
    [...new Set(ids)].map((id) => keys.task(id)),
    { consistent, what: 'tasks' },
  );
  return items.map(fromTaskItem);
}

/** AP-T14: which of these tasks exist (BatchGetItem projecting the id only). */
export async function existingTaskIds(ids: number[]): Promise<Set<number>> {
  const items = await getItems(
    [...new Set(ids)].map((id) => keys.task(id)),
    { projection: 'id', what: 'tasks' },
  );
  return new Set(items.map((i) => Number(i.id)));
}

/**
 * AP-T15 (maintenance, never on a request path): one page of a Scan for task items stored without
 * their listing keys (before the listing existed).
 */
export async function scanTasksWithoutListing(
  startKey?: Record<string, unknown>,
): Promise<{ tasks: Task[]; scanned: number; next?: Record<string, unknown> }> {
  const out = await db().send(
    new ScanCommand({
      TableName: tableName(),
      FilterExpression: 'entity = :task AND attribute_not_exists(gsi2pk)',
      ExpressionAttributeValues: { ':task': 'task' },
      ExclusiveStartKey: startKey,
    }),
  );
  return {
    tasks: (out.Items ?? []).map(fromTaskItem),
    scanned: out.ScannedCount ?? 0,
    next: out.LastEvaluatedKey,
  };
}

/** AP-T15: give a task its listing keys, under `version = :v` (false when it changed since it was read). */
export async function setTaskListingKeys(task: Task): Promise<boolean> {
  const k = keys.taskListing(task);
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(task.id),
        UpdateExpression: 'SET gsi1pk = :g1pk, gsi1sk = :g1sk, gsi2pk = :g2pk, gsi2sk = :g2sk',
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: {
          ':g1pk': k.gsi1pk,
          ':g1sk': k.gsi1sk,
          ':g2pk': k.gsi2pk,
          ':g2sk': k.gsi2sk,
          ':v': task.version,
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}
