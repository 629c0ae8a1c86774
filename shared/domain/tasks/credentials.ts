import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowSeconds } from '../../clock.ts';
import { db, isConditionFailure, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { audit } from '../auth/audit.ts';
import { seal } from '../auth/seal.ts';
import { newToken, verifySignature } from '../auth/signature.ts';
import { ConflictError, ValidationError } from '../errors.ts';
import type { Task } from './model.ts';
import { getTask } from './repository.ts';
import type { CredentialsRotated } from './responses.ts';

/**
 * A task's two credentials and their rotation (API guide §5.12): the token (alarm reports, the
 * fixed signature) and the secret (task auth, webhook signatures). A rotation makes new ones at once
 * and keeps the old ones valid for a stated overlap, so senders and receivers can move over without
 * a gap; the new ones work at once everywhere (a door that cached the task before the rotation reads
 * it again when a signature does not match).
 */
export type Credential = 'token' | 'secret';

/** The keys a task accepts for a credential now: the current one, and the previous one during its overlap. */
export function keysOf(task: Task, which: Credential, now: number): string[] {
  const previous = which === 'token' ? task.token_previous : task.secret_previous;
  const until = which === 'token' ? task.token_previous_until : task.secret_previous_until;
  return previous && until !== undefined && now < until ? [task[which], previous] : [task[which]];
}

/** Whether `sign` is a signature of `id&timestamp` with one of the task's keys for `which`. */
export function signedWith(
  task: Task,
  which: Credential,
  id: number | string,
  timestamp: number | string,
  sign: string,
  legacy: boolean,
  now = nowSeconds(),
): boolean {
  return keysOf(task, which, now).some((key) => verifySignature(key, id, timestamp, sign, legacy));
}

/** The most minutes an old credential may stay valid after a rotation (a week). */
export const MAX_OVERLAP_MINUTES = 10_080;

/**
 * AP-T18, PUT /alarmtask/credentials: new token and/or secret for the task (40-hex, CSPRNG), shown once; the
 * old ones stay valid for `overlap_minutes` (default 60, 0 ends them at once). Conditioned on the
 * task's version (a concurrent change: read again, up to a few times).
 */
export async function rotateCredentials(
  task: Task,
  input: { token?: 0 | 1; secret?: 0 | 1; overlap_minutes?: number },
): Promise<CredentialsRotated> {
  const which: Credential[] = (['token', 'secret'] as const).filter((k) => input[k] === 1);
  if (which.length === 0)
    throw ValidationError.of('token', 'name the credentials to rotate: token, secret or both');
  const overlap = (input.overlap_minutes ?? 60) * 60;
  const fresh = Object.fromEntries(which.map((k) => [k, newToken()])) as Partial<Record<Credential, string>>;
  let current: Task | undefined = task;
  for (let attempt = 0; ; attempt++) {
    if (!current) throw new ConflictError(`task [${task.id}] was deleted`);
    const now = nowSeconds();
    const until = now + overlap;
    const sets = ['updated_at = :now', 'version = version + :one'];
    const values: Record<string, unknown> = {
      ':now': now,
      ':one': 1,
      ':v': current.version,
      ':until': until,
    };
    for (const k of which) {
      sets.push(`${k}_sealed = :${k}`, `${k}_previous_sealed = :${k}_old`, `${k}_previous_until = :until`);
      values[`:${k}`] = seal(fresh[k] as string);
      values[`:${k}_old`] = seal(current[k]);
    }
    try {
      await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.task(task.id),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: values,
        }),
      );
      audit('task-credentials-rotated', { task: task.id, rotated: which, overlap_seconds: overlap });
      return {
        id: task.id,
        ...(fresh.token ? { token: fresh.token } : {}),
        ...(fresh.secret ? { secret: fresh.secret } : {}),
        previous_valid_until: until,
      };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    if (attempt >= 5) throw new ConflictError(`task [${task.id}] was changed concurrently, try again`);
    current = await getTask(task.id, true);
  }
}
