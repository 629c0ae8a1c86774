import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, queryAll, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { keyedDigest } from './seal.ts';

/**
 * Guessing is stopped by counting sign-in tries in fixed windows, in throttle items (`SIGNIN#...`,
 * each with a `ttl`). A try takes a slot *before* the password is checked, with one conditional
 * update, so a burst of parallel guesses cannot slip past a limit; the wrong password that fills a
 * limit locks that counter, for a time that doubles with each lock within a day (progressive). While
 * locked, every try it counts is refused without looking at the password, the right one too.
 *
 * Three counters take part in a sign-in:
 * - the **source address** (`ip#<addr>`): failed sign-ins from it, whatever the accounts;
 * - the **account at that address** (sort key `FROM#<addr>` in the account's partition): the
 *   person's own mistakes lock only that address's tries; a successful sign-in from it makes the
 *   address *known* to the account for KNOWN_SECONDS;
 * - the **account** (`uid#<uid>`, or `name#<keyed digest>` for a name nobody has): failures from
 *   every address not known to the account. Its lock refuses only such addresses, so a stranger
 *   guessing cannot lock the owner out of the address they sign in from.
 *
 * The state is modelled so that every item always holds `tries`, `window_start` and `locked_until`
 * (0: none), every conditional write has a state from which it succeeds, and every refusal ends at a
 * stated time: a slot is taken when the window is open, has room and no lock holds (a); a new window
 * starts when there is none, it has ended, or a lock has passed (b); otherwise the item says until
 * when the counter is refused (a lock, or a full window), and once that time has passed (b) succeeds.
 * Writes that race (a right and a wrong password at once, parallel first tries) only change which of
 * these states the item is in; a refused try re-reads and retries when the state moved under it.
 */
export type Subject = string;

export const personSubject = (uid: number): Subject => `uid#${uid}`;
/** What is kept of an account name nobody has: a digest keyed with the seal key (it may be a password). */
export const unknownAccountSubject = (typed: string): Subject =>
  `name#${keyedDigest('sign-in name', typed.trim().toLowerCase()).slice(0, 32)}`;
export const addressSubject = (ip: string): Subject => `ip#${ip.slice(0, 64)}`;

/** A successful sign-in makes its address known to the account for 30 days. */
export const KNOWN_SECONDS = 30 * 86_400;
/** Locks within this time of the last one escalate (each lasts twice the one before). */
export const ESCALATION_SECONDS = 86_400;

export interface Limits {
  max: number;
  windowSeconds: number;
  /** The first lock's duration; the n-th within ESCALATION_SECONDS lasts 2^(n-1) times as long... */
  lockSeconds: number;
  /** ...but never longer than this. */
  maxLockSeconds: number;
}

export type Key = { pk: string; sk: string };

/** A counter's item, as a taken slot returns it. */
export interface Counter {
  tries: number;
  window_start: number;
  locked_until: number;
  /** Locks so far within the escalation time, and when the last one was set. */
  locks: number;
  locked_at: number;
  /** (account at an address) until when the address is known to the account. */
  known_until: number;
}

/** A try's slot: taken (the counter after it), or refused until `until`. */
export type Slot = { taken: true; key: Key; counter: Counter } | { taken: false; key: Key; until: number };

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : Number(v ?? 0) || 0);
const counterOf = (item: Record<string, unknown> | undefined): Counter => ({
  tries: num(item?.tries),
  window_start: num(item?.window_start),
  locked_until: num(item?.locked_until),
  locks: num(item?.lock_count),
  locked_at: num(item?.locked_at),
  known_until: num(item?.known_until),
});

const FIELDS = { entity: 'signin_throttle', schema_version: SCHEMA_VERSION };
/** Throttle items live as long as a known address can (no item is needed longer). */
const ttlOf = (now: number) => now + KNOWN_SECONDS + ESCALATION_SECONDS;

/**
 * AP-S5: take a slot for one try of a counter, or learn until when it is refused. The same fixed
 * window serves the claim links' rate limits (claims/repository.ts, `entity` claim_throttle), which
 * never lock.
 */
export async function takeSlot(key: Key, limits: Limits, now: number, entity = FIELDS.entity): Promise<Slot> {
  const cut = now - limits.windowSeconds;
  const values = { ':now': now, ':cut': cut, ':one': 1, ':ttl': ttlOf(now) };
  for (let round = 0; round < 4; round++) {
    try {
      // (a) The window is open, has room, and no lock holds: one more try.
      const out = await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          UpdateExpression: 'SET tries = tries + :one, #ttl = :ttl',
          ConditionExpression: 'window_start > :cut AND tries < :max AND locked_until <= :now',
          ExpressionAttributeNames: { '#ttl': 'ttl' },
          ExpressionAttributeValues: { ...values, ':max': limits.max },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { taken: true, key, counter: counterOf(out.Attributes) };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    try {
      // (b) No window (a new item, or one missing a part), it has ended, or a lock has passed (and
      // none holds): a new window with this try. The locks so far stay, for the escalation.
      const out = await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          UpdateExpression:
            'SET entity = :e, schema_version = :v, tries = :one, window_start = :now, locked_until = :zero, ' +
            'lock_count = if_not_exists(lock_count, :zero), locked_at = if_not_exists(locked_at, :zero), ' +
            'known_until = if_not_exists(known_until, :zero), #ttl = :ttl',
          ConditionExpression:
            'attribute_not_exists(window_start) OR attribute_not_exists(tries) OR attribute_not_exists(locked_until) OR ' +
            '((window_start <= :cut OR locked_until > :zero) AND locked_until <= :now)',
          ExpressionAttributeNames: { '#ttl': 'ttl' },
          ExpressionAttributeValues: {
            ...values,
            ':zero': 0,
            ':e': entity,
            ':v': FIELDS.schema_version,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { taken: true, key, counter: counterOf(out.Attributes) };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    // (c) Neither: a lock holds, or the window is full. The item says until when; a state that
    // moved between the writes and this read (parallel tries) is tried again.
    const read = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
    const c = counterOf(read.Item);
    if (c.locked_until > now) return { taken: false, key, until: c.locked_until };
    if (read.Item && c.window_start > cut && c.tries >= limits.max)
      return { taken: false, key, until: c.window_start + limits.windowSeconds };
  }
  return { taken: false, key, until: now + 1 };
}

/** How long the next lock of a counter lasts: doubled for each lock within the escalation time. */
export function lockSecondsOf(
  counter: Pick<Counter, 'locks' | 'locked_at'>,
  limits: Limits,
  now: number,
): number {
  const n = counter.locked_at > 0 && now - counter.locked_at < ESCALATION_SECONDS ? counter.locks + 1 : 1;
  return Math.min(limits.maxLockSeconds, limits.lockSeconds * 2 ** Math.min(n - 1, 20));
}

/**
 * AP-S6: a wrong password filled a counter's limit: lock it from now. The lock is written with a
 * whole state (a window, tries), so it can never stand without the window that lets it pass. Returns
 * the lock's end.
 */
export async function lock(slot: Slot & { taken: true }, limits: Limits, now: number): Promise<number> {
  const escalated = slot.counter.locked_at > 0 && now - slot.counter.locked_at < ESCALATION_SECONDS;
  const until = now + lockSecondsOf(slot.counter, limits, now);
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: slot.key,
      UpdateExpression:
        'SET entity = :e, schema_version = :v, locked_until = :until, locked_at = :now, lock_count = :locks, ' +
        'window_start = if_not_exists(window_start, :now), tries = if_not_exists(tries, :max), ' +
        'known_until = if_not_exists(known_until, :zero), #ttl = :ttl',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':e': FIELDS.entity,
        ':v': FIELDS.schema_version,
        ':until': until,
        ':now': now,
        ':locks': escalated ? slot.counter.locks + 1 : 1,
        ':max': limits.max,
        ':zero': 0,
        ':ttl': ttlOf(now),
      },
    }),
  );
  return until;
}

/**
 * AP-S7: a right password: the counter starts afresh (tries, escalation), and for an account at an
 * address the address becomes known to the account. A lock set meanwhile by a parallel wrong try is
 * left standing (it passes by itself).
 */
export async function clearSlot(key: Key, now: number, known: boolean): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression:
          'SET entity = :e, schema_version = :v, tries = :zero, window_start = :now, locked_until = :zero, ' +
          `lock_count = :zero, locked_at = :zero, known_until = ${known ? ':known' : 'if_not_exists(known_until, :zero)'}, #ttl = :ttl`,
        ConditionExpression: 'attribute_not_exists(locked_until) OR locked_until <= :now',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':e': FIELDS.entity,
          ':v': FIELDS.schema_version,
          ':zero': 0,
          ':now': now,
          ':ttl': ttlOf(now),
          ...(known ? { ':known': now + KNOWN_SECONDS } : {}),
        },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/**
 * AP-S8: a try from an address succeeded: give its slot back (a successful sign-in is not a guess;
 * an office behind one address signs in many times a day). Never below zero.
 */
export async function returnSlot(key: Key): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'SET tries = tries - :one',
        ConditionExpression: 'tries > :zero',
        ExpressionAttributeValues: { ':one': 1, ':zero': 0 },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/**
 * AP-S13: lift every lock of an account (the operator's `user unlock`, a password set or reset): its
 * counter and its counters at each address (one Query of its partition) start afresh; the addresses
 * known to it stay known. Returns how many counters were locked.
 */
export async function unlockAccount(subject: Subject, now: number): Promise<number> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.signInThrottle(subject).pk },
    ConsistentRead: true,
  });
  for (const item of items) {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: { pk: String(item.pk), sk: String(item.sk) },
        UpdateExpression:
          'SET tries = :zero, window_start = :now, locked_until = :zero, lock_count = :zero, locked_at = :zero',
        ExpressionAttributeValues: { ':zero': 0, ':now': now },
      }),
    );
  }
  return items.filter((item) => counterOf(item).locked_until > now).length;
}
