import { nowMs, nowSeconds } from '../../clock.ts';
import type { User } from '../directory/model.ts';
import { findUsersBySignInName, getUser } from '../directory/repository.ts';
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from '../errors.ts';
import { logger } from '../../log.ts';
import { audit } from '../auth/audit.ts';
import {
  getCredential,
  rehashPassword,
  setDeactivated,
  signOutEverywhere,
  writePassword,
} from '../auth/credentials.ts';
import { personSubject, unknownAccountSubject, unlockAccount } from '../auth/lockout.ts';
import {
  hashPassword,
  needsRehash,
  passwordProblem,
  verifyNothing,
  verifyPassword,
} from '../auth/passwords.ts';
import { createSession, type SignedInPerson, personOf, type SignInMethod } from '../auth/sessions.ts';
import { failedTry, goodTry, type ThrottleDeps, takeTries, throttleDeps } from './throttle.ts';

export { SignInLockedError } from './throttle.ts';

/**
 * Signing in with an account and a password, and what a person or an operator does with passwords.
 * Every refusal of a sign-in says the same (`account or password is wrong`) whether the account is
 * unknown, has no password, is deactivated or the password is wrong, and takes the time of one
 * scrypt either way.
 */
export const WRONG = 'account or password is wrong';

export interface SignInDeps extends ThrottleDeps {
  findUsers: typeof findUsersBySignInName;
  getCredential: typeof getCredential;
  rehashPassword: typeof rehashPassword;
  hashPassword: (password: string) => Promise<string>;
  createSession: typeof createSession;
  now: () => number;
}

const signInDeps: SignInDeps = {
  ...throttleDeps,
  findUsers: findUsersBySignInName,
  getCredential,
  rehashPassword,
  hashPassword: (password) => hashPassword(password),
  createSession,
  now: nowSeconds,
};

/** The person a sign-in name stands for: exactly one directory user, else nobody. */
async function personNamed(account: string, deps: Pick<SignInDeps, 'findUsers'>): Promise<User | undefined> {
  const users = await deps.findUsers(account);
  if (users.length > 1) {
    logger.warn('sign-in name is shared by more than one directory user: refused', {
      uids: users.map((u) => u.uid),
    });
  }
  return users.length === 1 ? users[0] : undefined;
}

export interface SignedIn {
  /** The session id, for the cookie only. */
  id: string;
  person: SignedInPerson;
  expiresAt: number;
}

/**
 * POST /auth/signin: the slots of the source address and of the account (throttle.ts), then the
 * password. A wrong password that fills a limit locks that counter; a right one clears the account's
 * counters, makes the address known to it and gives the address its slot back. A hash made with
 * older parameters is replaced by one with today's.
 */
export async function signInWithPassword(
  input: { account: string; password: string; address: string },
  deps: SignInDeps = signInDeps,
): Promise<SignedIn> {
  const now = deps.now();
  const account = input.account.trim();
  const user = account ? await personNamed(account, deps) : undefined;
  const subject = user ? personSubject(user.uid) : unknownAccountSubject(account);
  let tries: Awaited<ReturnType<typeof takeTries>>;
  try {
    tries = await takeTries(subject, input.address, now, true, deps);
  } catch (err) {
    audit('signin-failed', { reason: 'locked', ...(user ? { uid: user.uid } : {}), address: input.address });
    throw err;
  }
  // An unknown account reads a credential nobody has (uid 0 is the operator, never a person): the
  // same reads and the same scrypt as a known one.
  const credential = await deps.getCredential(user?.uid ?? 0);
  const stored = credential?.password;
  const ok =
    user && stored ? await verifyPassword(input.password, stored) : await verifyNothing(input.password);
  if (!ok || !user || credential?.deactivated_at !== undefined) {
    await failedTry(tries, now, deps);
    audit('signin-failed', {
      reason: !user ? 'unknown account' : !stored ? 'no password' : ok ? 'deactivated' : 'wrong password',
      ...(user ? { uid: user.uid } : {}),
      address: input.address,
    });
    throw new UnauthorizedError(WRONG);
  }
  await goodTry(tries, now, deps);
  if (stored && needsRehash(stored)) {
    if (await deps.rehashPassword(user.uid, stored, await deps.hashPassword(input.password)))
      audit('password-rehash', { uid: user.uid });
  }
  audit('signin', { uid: user.uid, method: 'password', address: input.address });
  return startSession(user, 'password', deps);
}

/** A session for a person who proved who they are (password or single sign-on). */
export async function startSession(
  user: User,
  method: SignInMethod,
  deps: Pick<SignInDeps, 'createSession'> = signInDeps,
): Promise<SignedIn> {
  const { id, session } = await deps.createSession(user.uid, method);
  return { id, person: personOf(user), expiresAt: session.expires_at };
}

/**
 * PUT /auth/password: a signed-in person changes their own password, proving the current one (a
 * wrong one counts towards the account's lockout at the request's address). The new one must pass
 * the password rules and differ from the current one. Every session of the person ends; this browser
 * gets a new one.
 */
export async function changeOwnPassword(
  person: SignedInPerson,
  input: { current: string; password: string; address: string },
  deps: SignInDeps = signInDeps,
): Promise<SignedIn> {
  const problem = passwordProblem(input.password);
  if (problem) throw ValidationError.of('password', problem);
  const stored = (await deps.getCredential(person.uid))?.password;
  if (!stored) {
    throw new ConflictError(
      'you have no password to change (you sign in with single sign-on): ask an operator to set one',
    );
  }
  const now = deps.now();
  const tries = await takeTries(personSubject(person.uid), input.address, now, false, deps);
  if (!(await verifyPassword(input.current, stored))) {
    await failedTry(tries, now, deps);
    audit('signin-failed', { reason: 'wrong current password', uid: person.uid, address: input.address });
    throw ValidationError.of('current', 'is not your current password');
  }
  await goodTry(tries, now, deps);
  if (input.password.normalize('NFC') === input.current.normalize('NFC'))
    throw ValidationError.of('password', 'must not be your current password');
  await writePassword(person.uid, await hashPassword(input.password), nowMs());
  audit('password-change', { uid: person.uid, by: 'the person' });
  const user = await getUser(person.uid);
  if (!user) throw new NotFoundError(`user [${person.uid}] not found`);
  return startSession(user, 'password', deps);
}

/**
 * The operator (`npm run admin -- user password UID`): set or clear a person's password. A new one
 * must pass the password rules and differ from the current one. Setting or clearing it lifts the
 * person's sign-in lockout.
 */
export async function setPasswordByOperator(uid: number, password: string | undefined): Promise<User> {
  const user = await getUser(uid);
  if (!user) throw new NotFoundError(`user [${uid}] not found`);
  if (password !== undefined) {
    const problem = passwordProblem(password);
    if (problem) throw ValidationError.of('password', problem);
    const stored = (await getCredential(uid))?.password;
    if (stored && (await verifyPassword(password, stored)))
      throw ValidationError.of('password', 'must not be the current password');
  }
  await writePassword(uid, password === undefined ? undefined : await hashPassword(password), nowMs());
  await unlockAccount(personSubject(uid), nowSeconds());
  audit('password-change', { uid, by: 'operator', cleared: password === undefined });
  return user;
}

/** Sign a person out everywhere (the console's "Sign out everywhere", `npm run admin -- user signout`). */
export async function signOutPersonEverywhere(uid: number): Promise<void> {
  await signOutEverywhere(uid, nowMs());
}

/** The operator (`npm run admin -- user unlock UID`): lift every sign-in lock of a person. */
export async function unlockPerson(uid: number): Promise<User> {
  const user = await getUser(uid);
  if (!user) throw new NotFoundError(`user [${uid}] not found`);
  const lifted = await unlockAccount(personSubject(uid), nowSeconds());
  audit('unlock', { uid, locks: lifted, by: 'operator' });
  return user;
}

/**
 * The operator (`npm run admin -- user deactivate|activate UID`, or a directory import's `active`):
 * a deactivated person's sessions end and every sign-in (password or single sign-on) is refused;
 * activating lets them sign in again.
 */
export async function setPersonActive(uid: number, active: boolean): Promise<User> {
  const user = await getUser(uid);
  if (!user) throw new NotFoundError(`user [${uid}] not found`);
  await setDeactivated(uid, !active, nowMs());
  audit(active ? 'user-activated' : 'user-deactivated', { uid });
  return user;
}

/** The person a verified e-mail address stands for (single sign-on), else undefined. */
export async function personByEmail(email: string): Promise<User | undefined> {
  if (!email.includes('@')) return undefined;
  return personNamed(email, { findUsers: findUsersBySignInName });
}
