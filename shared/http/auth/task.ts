/**
 * The `app+task` authentication mode (`taskAuth`): application auth, then task auth on the `id`,
 * `timestamp` and `sign` of the input (API guide §3.2), checked before the route's own schema; the
 * task is the handler's `ctx.task`.
 */
import type { App } from '../../domain/auth/apps.ts';
import { loadSealKey } from '../../domain/auth/seal.ts';
import { authenticateTask } from '../../domain/tasks/authenticate.ts';
import { validateTaskAuthJson, validateTaskAuthQuery } from '../../generated/validators/task-auth.ts';
import type { Authentication } from '../handler.ts';
import { actAs, authenticateCaller } from './app.ts';

export const taskAuth: Authentication = {
  kind: 'app+task',
  async caller(ctx) {
    await loadSealKey();
    await authenticateCaller(ctx);
  },
  async admit(input, ctx, source) {
    (source.coerces ? validateTaskAuthQuery : validateTaskAuthJson)(input);
    ctx.task = await authenticateTask(input as unknown as { id: number; timestamp: string; sign: string });
  },
  act: (_input, ctx) => actAs(ctx.app as App, undefined, ctx.event),
};
