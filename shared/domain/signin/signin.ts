import { nowMs, nowSeconds } from '../../clock.ts';
import type { User } from '../directory/model.ts';
import { findUsersBySignInName, getUser } from '../directory/repository.ts';
import { AppError, ConflictError, NotFoundError, UnauthorizedError, ValidationError } from '../errors.ts';
import { logger } from '../../log.ts';
import { getCredential, signOutEverywhere, writePassword } from '../auth/credentials.ts';
import {
  addressSubject,
  clearSlots,
  type Limits,
  lock,
  personSubject,
  returnSlot,
  type Slot,
  takeSlot,
  unknownAccountSubject,
} from '../auth/lockout.ts';
import { hashPassword, passwordProblem, verifyNothing, verifyPassword } from '../auth/passwords.ts';
import { createSession, type SignedInPerson, personOf, type SignInMethod } from '../auth/sessions.ts';
import { signInSettings } from '../auth/settings.ts';

/**
 * Signing in with an account and a password, and what a person or an operator does with passwords.
 * Every refusal of a sign-in says the same (`account or password is wrong`) whether the account is
 * unknown, has no password or the password is wrong, and takes the time of one scrypt either way.
 */
export const WRONG = 'account or password is wrong';

export class SignInLockedError extends AppError {
  constructor(what: 'account' | 'address', retryAfter: number) {
    const minutes = Math.max(1, Math.ceil(retryAfter / 60));
    super(
      429,
      429,
      `too many failed sign-ins ${what === 'account' ? 'for this account' : 'from this address'}: try again in ${minutes} minute${minutes === 1 ? '' : 's'}`,
      {},
      { 'retry-after': String(Math.max(1, retryAfter)) },
    );
  }
}

export interface SignInDeps {
  findUsers: typeof findUsersBySignInName;
  getCredential: typeof getCredential;
  takeSlot: typeof takeSlot;
  lock: typeof lock;
  clearSlots: typeof clearSlots;
  returnSlot: typeof returnSlot;
  createSession: typeof createSession;
  now: () => number;
}

const signInDeps: SignInDeps = {
  findUsers: findUsersBySignInName,
  getCredential,
  takeSlot,
  lock,
  clearSlots,
  returnSlot,
  createSession,
  now: nowSeconds,
};

function limits(kind: 'account' | 'address'): Limits {
  const s = signInSettings();
  return {
    max: kind === 'account' ? s.accountMaxFailures : s.addressMaxFailures,
    windowSeconds: s.windowSeconds,
    lockSeconds: s.lockSeconds,
  };
}

function refuseUnlessTaken(
  slot: Slot,
  what: 'account' | 'address',
  now: number,
): asserts slot is Slot & { taken: true } {
  if (!slot.taken) throw new SignInLockedError(what, slot.until - now);
}

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
 * POST /auth/signin: the source address's slot, then the account's, then the password. A wrong
 * password that fills a limit locks that subject; a right one clears the account's tries and gives
 * the address its slot back.
 */
export async function signInWithPassword(
  input: { account: string; password: string; address: string },
  deps: SignInDeps = signInDeps,
): Promise<SignedIn> {
  const now = deps.now();
  const account = input.account.trim();
  const address = addressSubject(input.address);
  const addressSlot = await deps.takeSlot(address, limits('address'), now);
  refuseUnlessTaken(addressSlot, 'address', now);
  const user = account ? await personNamed(account, deps) : undefined;
  const subject = user ? personSubject(user.uid) : unknownAccountSubject(account);
  const accountSlot = await deps.takeSlot(subject, limits('account'), now);
  refuseUnlessTaken(accountSlot, 'account', now);
  // An unknown account reads a credential nobody has (uid 0 is the operator, never a person): the
  // same reads and the same scrypt as a known one.
  const stored = (await deps.getCredential(user?.uid ?? 0))?.password;
  const ok =
    user && stored ? await verifyPassword(input.password, stored) : await verifyNothing(input.password);
  if (!ok || !user) {
    await Promise.all([
      accountSlot.tries >= limits('account').max ? deps.lock(subject, limits('account'), now) : undefined,
      addressSlot.tries >= limits('address').max ? deps.lock(address, limits('address'), now) : undefined,
    ]);
    throw new UnauthorizedError(WRONG);
  }
  await Promise.all([deps.clearSlots(subject, now), deps.returnSlot(address)]);
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
 * wrong one counts towards the account's lockout). Every session of the person ends; this browser
 * gets a new one.
 */
export async function changeOwnPassword(
  person: SignedInPerson,
  input: { current: string; password: string },
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
  const subject = personSubject(person.uid);
  const slot = await deps.takeSlot(subject, limits('account'), now);
  refuseUnlessTaken(slot, 'account', now);
  if (!(await verifyPassword(input.current, stored))) {
    if (slot.tries >= limits('account').max) await deps.lock(subject, limits('account'), now);
    throw ValidationError.of('current', 'is not your current password');
  }
  await deps.clearSlots(subject, now);
  await writePassword(person.uid, await hashPassword(input.password), nowMs());
  const user = await getUser(person.uid);
  if (!user) throw new NotFoundError(`user [${person.uid}] not found`);
  return startSession(user, 'password', deps);
}

/** The operator (`npm run admin -- user password UID`): set or clear a person's password. */
export async function setPasswordByOperator(uid: number, password: string | undefined): Promise<User> {
  const user = await getUser(uid);
  if (!user) throw new NotFoundError(`user [${uid}] not found`);
  if (password !== undefined) {
    const problem = passwordProblem(password);
    if (problem) throw ValidationError.of('password', problem);
  }
  await writePassword(uid, password === undefined ? undefined : await hashPassword(password), nowMs());
  return user;
}

/** Sign a person out everywhere (the console's "Sign out everywhere", `npm run admin -- user signout`). */
export async function signOutPersonEverywhere(uid: number): Promise<void> {
  await signOutEverywhere(uid, nowMs());
}

/** The person a verified e-mail address stands for (single sign-on), else undefined. */
export async function personByEmail(email: string): Promise<User | undefined> {
  if (!email.includes('@')) return undefined;
  return personNamed(email, { findUsers: findUsersBySignInName });
}
