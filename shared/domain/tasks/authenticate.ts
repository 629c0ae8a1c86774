import { nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { withinSkew } from '../auth/signature.ts';
import { signedWith } from './credentials.ts';
import { NotFoundError, UnauthorizedError } from '../errors.ts';
import type { Task } from './model.ts';
import { getTask } from './repository.ts';

export interface TaskCredentials {
  id: number;
  timestamp: number | string;
  sign: string;
}

/**
 * Task authentication (API guide §3.2): unknown task 404, skew 401, bad signature 401. The secret is
 * the task's, or the one before its last rotation during the overlap.
 */
export async function authenticateTask(creds: TaskCredentials, deps = { getTask }): Promise<Task> {
  const task = await deps.getTask(creds.id, true);
  if (!task) throw new NotFoundError(`task [${creds.id}] not found`);
  const cfg = config();
  if (!withinSkew(Number(creds.timestamp), nowSeconds(), cfg.signSkewSeconds)) {
    throw new UnauthorizedError('signature was expired');
  }
  if (!signedWith(task, 'secret', creds.id, creds.timestamp, creds.sign.toLowerCase(), cfg.legacySign)) {
    throw new UnauthorizedError('signature invalid');
  }
  return task;
}
