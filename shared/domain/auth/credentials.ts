import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, fromItem, getItems, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import type { User } from '../directory/model.ts';

/**
 * A person's credential item (`USER#<uid>` / `CREDENTIAL`), beside the user item so that a directory
 * re-import (which puts the user item whole) never touches it: the password hash, and the moment
 * before which every session of the person is void ("sign out everywhere").
 */
export interface Credential {
  /** passwords.ts's stored form; absent: the person signs in with single sign-on only. */
  password?: string;
  password_set_at?: number;
  /** Unix ms: sessions created before it are signed out. */
  sessions_not_before?: number;
  /**
   * Unix ms since when the person is deactivated (`npm run admin -- user deactivate`, or a directory
   * import with `"active": false`): no sign-in of any kind, no session. Absent: active.
   */
  deactivated_at?: number;
  /** The single sign-on identity the person is bound to (the SHA-256 of `iss` + newline + `sub`). */
  sso_identity?: string;
}

/** AP-S1: a person's credential (consistent). */
export async function getCredential(uid: number): Promise<Credential | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.userCredential(uid), ConsistentRead: true }),
  );
  return out.Item as Credential | undefined;
}

/** AP-S2: a person and their credential in one read (BatchGetItem, consistent). */
export async function getPerson(uid: number): Promise<{ user?: User; credential?: Credential }> {
  const items = await getItems([keys.user(uid), keys.userCredential(uid)], {
    what: 'person read',
    consistent: true,
  });
  const user = items.find((i) => i.sk === 'USER');
  const credential = items.find((i) => i.sk === 'CREDENTIAL');
  return {
    user: user ? fromItem<User>(user) : undefined,
    credential: credential as Credential | undefined,
  };
}

const base = { entity: 'credential', schema_version: SCHEMA_VERSION };

/**
 * AP-S3: set (a stored hash) or clear (undefined) a person's password; either signs the person out
 * everywhere (`sessions_not_before` = now). The user must exist in the directory (checked by the
 * caller).
 */
export async function writePassword(uid: number, hash: string | undefined, nowMs: number): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.userCredential(uid),
      UpdateExpression: hash
        ? 'SET entity = :e, schema_version = :v, uid = :u, password = :h, password_set_at = :t, sessions_not_before = :t'
        : 'SET entity = :e, schema_version = :v, uid = :u, sessions_not_before = :t REMOVE password, password_set_at',
      ExpressionAttributeValues: {
        ':e': base.entity,
        ':v': base.schema_version,
        ':u': uid,
        ':t': nowMs,
        ...(hash ? { ':h': hash } : {}),
      },
    }),
  );
}

/**
 * AP-S14: replace a password's hash by a stronger one of the same password (made at a successful
 * sign-in), unless it was changed meanwhile; sessions stay.
 */
export async function rehashPassword(uid: number, old: string, hash: string): Promise<boolean> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.userCredential(uid),
        UpdateExpression: 'SET password = :h',
        ConditionExpression: 'password = :old',
        ExpressionAttributeValues: { ':h': hash, ':old': old },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * AP-S15: deactivate a person (every session ends: `sessions_not_before` = now) or make them active
 * again.
 */
export async function setDeactivated(uid: number, deactivated: boolean, nowMs: number): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.userCredential(uid),
      UpdateExpression: deactivated
        ? 'SET entity = :e, schema_version = :v, uid = :u, deactivated_at = :t, sessions_not_before = :t'
        : 'SET entity = :e, schema_version = :v, uid = :u REMOVE deactivated_at',
      ExpressionAttributeValues: {
        ':e': base.entity,
        ':v': base.schema_version,
        ':u': uid,
        ...(deactivated ? { ':t': nowMs } : {}),
      },
    }),
  );
}

/** AP-S4: sign a person out everywhere: every session created before `nowMs` is void. */
export async function signOutEverywhere(uid: number, nowMs: number): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.userCredential(uid),
      UpdateExpression: 'SET entity = :e, schema_version = :v, uid = :u, sessions_not_before = :t',
      ExpressionAttributeValues: { ':e': base.entity, ':v': base.schema_version, ':u': uid, ':t': nowMs },
    }),
  );
}
