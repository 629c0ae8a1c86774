import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { seal, unseal } from '../auth/seal.ts';
import type { Task } from './model.ts';

/** The stored form of a task: token and secret are sealed (see auth/seal.ts). */
export interface TaskItem extends Omit<Task, 'token' | 'secret'> {
  pk: string;
  sk: string;
  entity: 'task';
  schema_version: number;
  token_sealed: string;
  secret_sealed: string;
}

export function toTaskItem(task: Task): TaskItem {
  const { token, secret, ...rest } = task;
  return {
    ...keys.task(task.id),
    entity: 'task',
    schema_version: SCHEMA_VERSION,
    ...rest,
    token_sealed: seal(token),
    secret_sealed: seal(secret),
  };
}

export function fromTaskItem(item: Record<string, unknown>): Task {
  const { pk: _pk, sk: _sk, entity: _e, schema_version: _v, token_sealed, secret_sealed, ...rest } =
    item as unknown as TaskItem;
  return { ...(rest as Omit<Task, 'token' | 'secret'>), token: unseal(token_sealed), secret: unseal(secret_sealed) };
}

/** AP: get a task by id. */
export async function getTask(id: number, consistent = false): Promise<Task | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: keys.task(id), ConsistentRead: consistent }));
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
  const out: PermissionItem[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.permissionsOfUser(uid).gsi1pk },
        ExclusiveStartKey: start,
      }),
    );
    for (const i of page.Items ?? []) out.push({ task_id: i.task_id, uid: i.uid, access: i.access });
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

export function permissionItem(p: PermissionItem): Record<string, unknown> {
  return {
    ...keys.taskPermission(p.task_id, p.uid),
    ...keys.taskPermissionByUser(p.uid, p.task_id),
    entity: 'permission',
    schema_version: SCHEMA_VERSION,
    ...p,
  };
}
