/**
 * The modes of the routes beyond the interface: `reader` (`reader`: an app holding the grant `read`,
 * or `operate` where the route changes something) and `admin` (`adminAuth`: a deployment-wide route,
 * an app holding the grant `admin`). Either acts as the `uid` the input names, or a signed-in person
 * calls (the acting user whatever `uid` says).
 */
import type { App } from '../../domain/auth/apps.ts';
import { getUser } from '../../domain/directory/repository.ts';
import { NotFoundError } from '../../domain/errors.ts';
import { OPERATOR } from '../../domain/tasks/access.ts';
import type { Authentication } from '../handler.ts';
import { appOrPersonMode } from './app-or-person.ts';

/**
 * The super administrator's powers (an app holding `admin`): the named user must exist, then the
 * request runs as the operator, who sees every task (shared/domain/tasks/access.ts).
 */
const superAdmin: Authentication['act'] = async (input, ctx) => {
  if (!(ctx.app as App).grants.includes('admin')) return;
  const uid = Number(input.uid);
  if (!(await getUser(uid))) throw new NotFoundError(`user [${uid}] not found`);
  input.uid = OPERATOR;
};

/** A route beyond the interface: the grant `read`, or `operate` for the routes that change something. */
export const reader = (options: { grant?: 'read' | 'operate' } = {}): Authentication =>
  appOrPersonMode('reader', { ...options, actor: 'uid' }, superAdmin);

/** A deployment-wide route: the grant `admin` (a person: the use case requires role 9). */
export const adminAuth: Authentication = appOrPersonMode('admin', { actor: 'uid' }, superAdmin);
