import { NotFoundError } from '../errors.ts';
import { ROLE_SUPER_ADMIN, type User } from './model.ts';
import { getUser } from './repository.ts';

/**
 * The acting user of a read or of a change beyond the client contract (tasks, schedules): a super
 * administrator (role 9) may do everything; anyone else what their permissions on the object allow.
 */
export interface Reader {
  user: User;
  admin: boolean;
}

/**
 * The operator at the admin CLI (`npm run admin`), who holds the table's credentials and so reads
 * everything. Not a user id: HTTP inputs take ids from 1, so no request can name it.
 */
export const OPERATOR = 0;

/** The acting user (404 when unknown). */
export async function loadReader(uid: number): Promise<Reader> {
  if (uid === OPERATOR) {
    return {
      user: { uid: 0, username: 'operator', user: 'operator', role: ROLE_SUPER_ADMIN } as User,
      admin: true,
    };
  }
  const user = await getUser(uid);
  if (!user) throw new NotFoundError(`user [${uid}] not found`);
  return { user, admin: user.role === ROLE_SUPER_ADMIN };
}

/** Who may read (`ro`) and change (`rw`) an object: a task, a schedule. */
export interface Permission {
  rw: number[];
  ro: number[];
}

/**
 * The stored permission of a request's lists: `rw` always holds the creator (when a person created
 * it, not the operator); a uid in both lists is `rw`.
 */
export function normPermission(p: Partial<Permission> | undefined, creator: number): Permission {
  const rw = [...new Set([...(creator === OPERATOR ? [] : [creator]), ...(p?.rw ?? [])])];
  const ro = [...new Set(p?.ro ?? [])].filter((u) => !rw.includes(u));
  return { rw, ro };
}
