import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createHash } from 'node:crypto';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/**
 * Guessing is stopped by counting sign-in tries per subject in a fixed window (`SIGNIN#<subject>` /
 * `THROTTLE`, with a `ttl`). A try takes a slot *before* the password is checked, with one
 * conditional update, so a burst of parallel guesses cannot slip past the limit; the slot that fills
 * the limit with a wrong password locks the subject until `locked_until` (and at least until the
 * window ends). While locked, every try is refused without looking at the password, the right one
 * too.
 *
 * Subjects: a person (`uid#<uid>`), an account name nobody has (`name#<sha256 of what was typed>`:
 * it may be a password typed in the wrong field, so only its hash is kept; it locks like a real
 * account, so lockout tells nothing about which accounts exist), and a source address (`ip#<addr>`).
 */
export type Subject = string;

export const personSubject = (uid: number): Subject => `uid#${uid}`;
export const unknownAccountSubject = (typed: string): Subject =>
  `name#${createHash('sha256').update(typed.trim().toLowerCase(), 'utf8').digest('hex').slice(0, 32)}`;
export const addressSubject = (ip: string): Subject => `ip#${ip.slice(0, 64)}`;

export interface Limits {
  max: number;
  windowSeconds: number;
  lockSeconds: number;
}

/** A try's slot: taken (with how many tries the window holds now), or refused until `until`. */
export type Slot = { taken: true; tries: number } | { taken: false; until: number };

/** AP-S5: take a slot for one try of `subject`, or learn until when it is refused. */
export function takeSlot(subject: Subject, limits: Limits, now: number): Promise<Slot> {
  return takeWindowSlot(keys.signInThrottle(subject), 'signin_throttle', limits, now);
}

/**
 * A slot of the fixed-window counter item `key` (the item `entity`): the sign-in throttle's, and
 * the claim links' rate limits (claims/repository.ts), which never lock (`lockSeconds` 0).
 */
export async function takeWindowSlot(
  key: { pk: string; sk: string },
  entity: string,
  limits: Limits,
  now: number,
): Promise<Slot> {
  const cut = now - limits.windowSeconds;
  const ttl = now + Math.max(limits.windowSeconds, limits.lockSeconds) + 3600;
  // The window is open, below the limit, not locked: one more try.
  const more = async (): Promise<Slot | undefined> => {
    try {
      const out = await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          UpdateExpression: 'SET tries = tries + :one',
          ConditionExpression:
            'window_start > :cut AND tries < :max AND (attribute_not_exists(locked_until) OR locked_until <= :now)',
          ExpressionAttributeValues: { ':one': 1, ':cut': cut, ':max': limits.max, ':now': now },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return { taken: true, tries: Number(out.Attributes?.tries) };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      return undefined;
    }
  };
  const taken = await more();
  if (taken) return taken;
  try {
    // No window, or it has ended and no lock holds: a new window with this try.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression:
          'SET entity = :e, schema_version = :v, tries = :one, window_start = :now, #ttl = :ttl REMOVE locked_until',
        ConditionExpression:
          'attribute_not_exists(pk) OR (window_start <= :cut AND (attribute_not_exists(locked_until) OR locked_until <= :now))',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':e': entity,
          ':v': SCHEMA_VERSION,
          ':one': 1,
          ':now': now,
          ':cut': cut,
          ':ttl': ttl,
        },
      }),
    );
    return { taken: true, tries: 1 };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
  // A concurrent try may have opened the window meanwhile: one more try in it.
  const again = await more();
  if (again) return again;
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
  const item = out.Item ?? {};
  const until = Math.max(
    Number(item.locked_until ?? 0),
    Number(item.window_start ?? now) + limits.windowSeconds,
    now + 1,
  );
  return { taken: false, until };
}

/** AP-S6: a wrong password filled the limit: lock the subject from now. */
export async function lock(subject: Subject, limits: Limits, now: number): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.signInThrottle(subject),
      UpdateExpression: 'SET locked_until = :until, #ttl = :ttl',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':until': now + limits.lockSeconds,
        ':ttl': now + Math.max(limits.windowSeconds, limits.lockSeconds) + 3600,
      },
    }),
  );
}

/** AP-S7: a person signed in: their tries start afresh (unless locked meanwhile). */
export async function clearSlots(subject: Subject, now: number): Promise<void> {
  try {
    await db().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.signInThrottle(subject),
        ConditionExpression: 'attribute_not_exists(locked_until) OR locked_until <= :now',
        ExpressionAttributeValues: { ':now': now },
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
export async function returnSlot(subject: Subject): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.signInThrottle(subject),
        UpdateExpression: 'SET tries = tries - :one',
        ConditionExpression: 'tries > :zero',
        ExpressionAttributeValues: { ':one': 1, ':zero': 0 },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}
