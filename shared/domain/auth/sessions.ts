import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { nowMs } from '../../clock.ts';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import type { User } from '../directory/model.ts';
import { getPerson } from './credentials.ts';
import { signInSettings } from './settings.ts';

/**
 * Console sessions. A session id is 256 random bits, sent to the browser once in an HttpOnly cookie;
 * the table keeps only its SHA-256 (`SESSION#<hash>`), so a table export holds no usable session. A
 * session ends after SESSION_IDLE_MINUTES without a request, SESSION_MAX_HOURS after sign-in, on sign
 * out, when the person is signed out everywhere (the credential's `sessions_not_before`) or
 * deactivated (its `deactivated_at`). The
 * item's `ttl` (its absolute end) only clears the table: every check is made here.
 *
 * The CSRF token of a session is HMAC-SHA256(key = session id, "csrf"): the page asks for it (GET
 * /auth/session) and sends it with every state-changing request. Only someone holding the cookie's
 * value can compute it, and the page cannot read the cookie (HttpOnly), so a token the service
 * accepts came from a page of this origin.
 */
export type SignInMethod = 'password' | 'oidc';

/** The person a session acts as (what the console shows). */
export interface SignedInPerson {
  uid: number;
  username: string;
  user: string;
  email: string;
  role: number;
}

export interface Session {
  /** SHA-256 of the id, hex: the item key. */
  hash: string;
  uid: number;
  method: SignInMethod;
  /** Unix ms (compared with `sessions_not_before`). */
  created_ms: number;
  /** Unix seconds. */
  last_seen: number;
  expires_at: number;
}

/** base64url of 32 bytes. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export const isSessionId = (value: string): boolean => SESSION_ID.test(value);

export const hashSessionId = (id: string): string => createHash('sha256').update(id, 'utf8').digest('hex');

export function csrfToken(id: string): string {
  return createHmac('sha256', id).update('csrf').digest('base64url');
}

/** Whether `token` is the CSRF token of session `id` (constant time). */
export function csrfMatches(id: string, token: string | undefined): boolean {
  if (!token) return false;
  const expected = Buffer.from(csrfToken(id));
  const got = Buffer.from(token);
  return got.length === expected.length && timingSafeEqual(got, expected);
}

export const personOf = (u: User): SignedInPerson => ({
  uid: u.uid,
  username: u.username,
  user: u.user ?? '',
  email: u.email ?? '',
  role: u.role ?? 0,
});

/** Refreshing `last_seen` costs a write: at most one per session per this many seconds. */
const TOUCH_EVERY_SECONDS = 60;

/** AP-S9: a new session for `uid`; the id is returned once, for the cookie. */
export async function createSession(
  uid: number,
  method: SignInMethod,
): Promise<{ id: string; session: Session }> {
  const settings = signInSettings();
  const id = randomBytes(32).toString('base64url');
  const ms = nowMs();
  const now = Math.floor(ms / 1000);
  const session: Session = {
    hash: hashSessionId(id),
    uid,
    method,
    created_ms: ms,
    last_seen: now,
    expires_at: now + settings.sessionMaxSeconds,
  };
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.session(session.hash),
        entity: 'session',
        schema_version: SCHEMA_VERSION,
        uid,
        method,
        created_ms: ms,
        last_seen: now,
        expires_at: session.expires_at,
        ttl: session.expires_at,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  return { id, session };
}

/** Why a presented session does not stand (for the 401's message). */
export type SessionRefusal = 'none' | 'ended';

/**
 * AP-S10: the session a cookie names, with its person, when it still stands: not expired (idle or
 * absolute), not signed out, the person still in the directory. Refreshes `last_seen` at most once a
 * minute.
 */
export async function resolveSession(
  id: string | undefined,
): Promise<{ session: Session; person: SignedInPerson } | { refused: SessionRefusal }> {
  if (id === undefined) return { refused: 'none' };
  if (!isSessionId(id)) return { refused: 'ended' };
  const settings = signInSettings();
  const hash = hashSessionId(id);
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.session(hash), ConsistentRead: true }),
  );
  const item = out.Item;
  const now = Math.floor(nowMs() / 1000);
  if (!item) return { refused: 'ended' };
  const session: Session = {
    hash,
    uid: Number(item.uid),
    method: item.method as SignInMethod,
    created_ms: Number(item.created_ms),
    last_seen: Number(item.last_seen),
    expires_at: Number(item.expires_at),
  };
  if (now >= session.expires_at || now >= session.last_seen + settings.sessionIdleSeconds) {
    return { refused: 'ended' };
  }
  const { user, credential } = await getPerson(session.uid);
  if (
    !user ||
    credential?.deactivated_at !== undefined ||
    session.created_ms < Number(credential?.sessions_not_before ?? 0)
  )
    return { refused: 'ended' };
  if (now - session.last_seen >= TOUCH_EVERY_SECONDS) {
    await touch(hash, now);
    session.last_seen = now;
  }
  return { session, person: personOf(user) };
}

async function touch(hash: string, now: number): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.session(hash),
        UpdateExpression: 'SET last_seen = :now',
        ConditionExpression: 'attribute_exists(pk) AND last_seen < :now',
        ExpressionAttributeValues: { ':now': now },
      }),
    );
  } catch (err) {
    // Signed out meanwhile, or touched by a parallel request: either way nothing to do.
    if (!isConditionFailure(err)) throw err;
  }
}

/** AP-S11: end one session (sign out). */
export async function deleteSession(hash: string): Promise<void> {
  await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.session(hash) }));
}
