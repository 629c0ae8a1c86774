import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, fromItem, getItems, queryAll, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { seal, unseal } from '../auth/seal.ts';
import type { Task } from './model.ts';
import { sealTaskRobots } from '../channels/robots.ts';

/**
 * The stored form of a task: token and secret are sealed (see auth/seal.ts), and so is every robot's
 * webhook and secret in its receivers (robots.ts; a task read keeps them sealed).
 */
export interface TaskItem extends Omit<Task, 'token' | 'secret' | 'token_previous' | 'secret_previous'> {
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
  token_previous_sealed?: string;
  secret_previous_sealed?: string;
}

/**
 * Every Put of a task writes its listing keys (gsi1 by pinyin, gsi2 by name: keys.taskListing), so a
 * rename moves them; the UpdateItem writers (status, settings) leave them as they are.
 */
export function toTaskItem(task: Task): TaskItem {
  const { token, secret, token_previous, secret_previous, ...rest } = task;
  return {
    ...keys.task(task.id),
    ...keys.taskListing(task),
    entity: 'task',
    schema_version: SCHEMA_VERSION,
    ...sealTaskRobots(rest),
    token_sealed: seal(token),
    secret_sealed: seal(secret),
    ...(token_previous ? { token_previous_sealed: seal(token_previous) } : {}),
    ...(secret_previous ? { secret_previous_sealed: seal(secret_previous) } : {}),
  };
}

export function fromTaskItem(item: Record<string, unknown>): Task {
  const { token_sealed, secret_sealed, token_previous_sealed, secret_previous_sealed, ...rest } =
    fromItem<Omit<TaskItem, 'pk' | 'sk'>>(item);
  return {
    ...rest,
    token: unseal(token_sealed),
    secret: unseal(secret_sealed),
    ...(token_previous_sealed ? { token_previous: unseal(token_previous_sealed) } : {}),
    ...(secret_previous_sealed ? { secret_previous: unseal(secret_previous_sealed) } : {}),
  } as Task;
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

/** AP-T6: the permission items of one task (its item collection, `sk begins_with PERM#`). */
export async function listTaskPermissions(taskId: number): Promise<PermissionItem[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :perm)',
    ExpressionAttributeValues: { ':pk': keys.task(taskId).pk, ':perm': keys.taskPermissionPrefix() },
    ConsistentRead: true,
  });
  return items.map(toPermission);
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
