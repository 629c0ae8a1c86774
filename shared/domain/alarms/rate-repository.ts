import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/**
 * The shared count behind the per-task rate limit (docs/rate-limits.md): one item per task and Unix
 * second, `RATE#<task id>#<second>` / `RATE`, holding `used`, the alarms the task's containers leased
 * in that second. Leasing is one conditional UpdateItem that adds tokens only while the total stays
 * within the limit, so whatever the number of containers the count never passes it.
 */
export interface RateLease {
  /** Tokens added to the window for the caller (0: not even `need` remained). */
  granted: number;
  /** The window's count after the grant, or as found when nothing was granted. */
  used: number;
}

/** Window items outlive their second by this much, then DynamoDB's TTL removes them. */
const WINDOW_TTL_SECONDS = 60;
/** Conditional writes lost to other containers' leases before the caller is told nothing is left. */
const MAX_ATTEMPTS = 4;

/** `used` of the item a failed condition returned (raw attribute values: errors are not unmarshalled). */
function usedOf(item: unknown): number {
  const used = (item as { used?: unknown } | undefined)?.used;
  if (typeof used === 'number') return used;
  const n = (used as { N?: string } | undefined)?.N;
  return n === undefined ? 0 : Number(n);
}

/**
 * AP-R4: leases tokens of a task's second. Adds `want` to `used` if the total stays within `limit`
 * (`attribute_not_exists(used) OR used <= limit - want`); when fewer remain, the failed condition
 * returns the item (`ReturnValuesOnConditionCheckFailure`, no read) and the remainder is leased the
 * same way if it covers `need`. One write per lease; a second one only when the window is nearly
 * used up, more only when other containers lease the last tokens at the same moment.
 */
export async function leaseRateTokens(
  taskId: number,
  second: number,
  need: number,
  want: number,
  limit: number,
  signal?: AbortSignal,
  /** Which item of a split second (its limit the item's share). */
  shard = 0,
): Promise<RateLease> {
  let take = want;
  let seen = 0;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      const out = await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.rateWindow(taskId, second, shard),
          UpdateExpression: 'ADD used :n SET entity = :e, schema_version = :v, #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(used) OR used <= :room',
          ExpressionAttributeNames: { '#ttl': 'ttl' },
          ExpressionAttributeValues: {
            ':n': take,
            ':room': limit - take,
            ':e': 'rate_window',
            ':v': SCHEMA_VERSION,
            ':ttl': second + 1 + WINDOW_TTL_SECONDS,
          },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        { abortSignal: signal },
      );
      return { granted: take, used: Number(out.Attributes?.used ?? take) };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      seen = usedOf((err as { Item?: unknown }).Item);
      const rest = limit - seen;
      if (rest < need) return { granted: 0, used: seen };
      take = rest;
    }
  }
  return { granted: 0, used: seen };
}
