import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { takeSlot } from '../auth/lockout.ts';

/**
 * The table side of claim links (KEY-DESIGN.md, AP-C1..AP-C3): the use of a link, kept under its
 * nonce (never the token), and the rate limits of links and source addresses. Every item expires.
 */

/** A link's rate limit: its claims per minute (`link#<nonce>`); a source address's requests (`ip#<addr>`). */
export const linkSubject = (nonce: string) => `link#${nonce}`;
export const addressSubject = (ip: string) => `ip#${ip.slice(0, 64)}`;

/** A request's slot of a claim rate limit: taken, or refused until `until`. */
export type ClaimSlot = { taken: true } | { taken: false; until: number };

/** AP-C1: take a slot of a subject's minute, or learn until when it is refused. */
export function takeClaimSlot(subject: string, perMinute: number, now: number): Promise<ClaimSlot> {
  return takeSlot(
    keys.claimThrottle(subject),
    { max: perMinute, windowSeconds: 60, lockSeconds: 0, maxLockSeconds: 0 },
    now,
    'claim_throttle',
  );
}

/**
 * AP-C2: mark a link used, once: false when it was used before. The item lives until the link has
 * expired (and a day more), which is as long as the mark can matter.
 */
export async function markLinkUsed(
  nonce: string,
  use: { workflow_id: number; uid: number; channel: string; at: number; expires_at: number },
): Promise<boolean> {
  try {
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.claimLinkUse(nonce),
          entity: 'claim_link_use',
          schema_version: SCHEMA_VERSION,
          ...use,
          ttl: use.expires_at + 86_400,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** AP-C3: give a link back (its claim was refused before it changed anything: the link may try again). */
export async function releaseLink(nonce: string): Promise<void> {
  await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.claimLinkUse(nonce) }));
}
