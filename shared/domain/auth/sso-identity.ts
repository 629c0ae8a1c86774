import { DeleteCommand, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createHash } from 'node:crypto';
import {
  db,
  isConditionFailure,
  SCHEMA_VERSION,
  tableName,
  transactionConditionFailed,
} from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/**
 * The single sign-on identity a person is bound to: the provider's issuer and the subject (`sub`) it
 * names them by, which a provider never reassigns (an e-mail address may change or be recycled). The
 * first sign-on of a person, found by their verified e-mail address, binds them; every later one is
 * matched on `(iss, sub)` alone. A link item `SSOID#<identity>` names the person; the person's
 * credential holds the identity, so a person is bound to one identity and an identity to one person.
 */
export const identityOf = (iss: string, sub: string): string =>
  createHash('sha256').update(`${iss}\n${sub}`, 'utf8').digest('hex');

/** AP-S16: the person an identity is bound to (consistent), if any. */
export async function personOfIdentity(identity: string): Promise<number | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.ssoIdentity(identity), ConsistentRead: true }),
  );
  return out.Item ? Number(out.Item.uid) : undefined;
}

/**
 * AP-S17: bind a person to an identity, in one transaction: the link item (new) and the person's
 * credential (no identity yet, or this one). `bound`; `taken` when the identity is bound already (a
 * parallel first sign-on: read it again); `other` when the person is bound to another identity.
 */
export async function bindIdentity(
  uid: number,
  identity: string,
  claims: { iss: string; sub: string },
  nowMs: number,
): Promise<'bound' | 'taken' | 'other'> {
  try {
    await db().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName(),
              Item: {
                ...keys.ssoIdentity(identity),
                entity: 'sso_identity',
                schema_version: SCHEMA_VERSION,
                uid,
                iss: claims.iss.slice(0, 512),
                sub: claims.sub.slice(0, 512),
                created_ms: nowMs,
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Update: {
              TableName: tableName(),
              Key: keys.userCredential(uid),
              UpdateExpression: 'SET entity = :e, schema_version = :v, uid = :u, sso_identity = :i',
              ConditionExpression: 'attribute_not_exists(sso_identity) OR sso_identity = :i',
              ExpressionAttributeValues: {
                ':e': 'credential',
                ':v': SCHEMA_VERSION,
                ':u': uid,
                ':i': identity,
              },
            },
          },
        ],
      }),
    );
    return 'bound';
  } catch (err) {
    const failed = transactionConditionFailed(err);
    if (failed.includes(0)) return 'taken';
    if (failed.includes(1)) return 'other';
    throw err;
  }
}

/**
 * AP-S18: unbind a person from their identity (the operator's `user unlink-sso`): the next sign-on
 * binds them again by their verified e-mail address. Whether they were bound.
 */
export async function unbindIdentity(uid: number): Promise<boolean> {
  let identity: string | undefined;
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.userCredential(uid),
        UpdateExpression: 'REMOVE sso_identity',
        ConditionExpression: 'attribute_exists(sso_identity)',
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    identity = out.Attributes?.sso_identity as string | undefined;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
  if (identity)
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.ssoIdentity(identity) }));
  return true;
}
