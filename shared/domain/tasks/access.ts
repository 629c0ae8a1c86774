import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { ROLE_SUPER_ADMIN, userView } from '../directory/model.ts';
import { loadReader, type Reader } from '../directory/readers.ts';
import { getUser } from '../directory/repository.ts';
import type { UserProfile } from '../directory/responses.ts';
import { ForbiddenError, NotFoundError } from '../errors.ts';
import type { Task } from './model.ts';
import { getTask, listPermissionsOfUser } from './repository.ts';

/**
 * Who may read what (the read side: lists, history, traces, deliveries). Every read names its acting
 * user (`uid`, like `created_by` of the workflow operations): a super administrator (role 9) reads
 * everything; any other user reads the tasks they hold a permission on (`ro` or `rw`) and acts
 * (test-send, redrive of a task's messages) on those they hold `rw` on.
 */
export type Access = 'read' | 'write';

export { loadReader, OPERATOR, type Reader } from '../directory/readers.ts';

/** AP-T12: one user's permission on one task (`TASK#<id>` / `PERM#<uid>`). */
async function permissionOf(taskId: number, uid: number): Promise<'rw' | 'ro' | undefined> {
  const out = await db().send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.taskPermission(taskId, uid),
      ProjectionExpression: '#a',
      ExpressionAttributeNames: { '#a': 'access' },
    }),
  );
  return out.Item?.access as 'rw' | 'ro' | undefined;
}

/**
 * The task, when `uid` may read it (or write to it, `access` 'write'): 404 for an unknown user or
 * task, 403 `user [u] has no permission on task [t]` (read) / `user [u] may not change task [t]`
 * (write, a read-only permission).
 */
export async function taskForUser(uid: number, taskId: number, access: Access = 'read'): Promise<Task> {
  const [reader, task, permission] = await Promise.all([
    loadReader(uid),
    getTask(taskId),
    permissionOf(taskId, uid),
  ]);
  if (!task) throw new NotFoundError(`task [${taskId}] not found`);
  if (reader.admin) return task;
  if (!permission) throw new ForbiddenError(`user [${uid}] has no permission on task [${taskId}]`);
  if (access === 'write' && permission !== 'rw') {
    throw new ForbiddenError(`user [${uid}] has read-only permission on task [${taskId}]`);
  }
  return task;
}

/**
 * 403 unless `uid` may read task `taskId` (role 9, or any permission on it), whether or not the task
 * still exists (a deleted task's workflows stay readable by id, to those who may read everything).
 */
export async function requireReadOf(uid: number, taskId: number): Promise<void> {
  const [reader, permission] = await Promise.all([loadReader(uid), permissionOf(taskId, uid)]);
  if (!reader.admin && !permission)
    throw new ForbiddenError(`user [${uid}] has no permission on task [${taskId}]`);
}

/** 403 unless the acting user is a super administrator (deployment-wide views: dead letters). */
export async function requireAdmin(uid: number): Promise<Reader> {
  const reader = await loadReader(uid);
  if (!reader.admin) throw new ForbiddenError(`user [${uid}] is not a super administrator (role 9)`);
  return reader;
}

/** GET /user/profile: the user and the tasks they may read / write. */
export async function userProfile(uid: number): Promise<UserProfile> {
  const user = await getUser(uid);
  if (!user) throw new NotFoundError(`user [${uid}] not found`);
  const perms = user.role === ROLE_SUPER_ADMIN ? [] : await listPermissionsOfUser(uid);
  return {
    user: userView(user),
    permission: {
      role: user.role,
      read: perms.filter((p) => p.access === 'ro').map((p) => p.task_id),
      write: perms.filter((p) => p.access === 'rw').map((p) => p.task_id),
    },
  };
}
