import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/**
 * The shared count behind the per-task rate limit (docs/rate-limits.md): one item per task and
 * minute, `RATE#<task id>#<minute>` / `RATE`, holding per second of that minute (`s0` .. `s59`) the
 * alarms the task's containers leased in that second. Leasing is one conditional UpdateItem that adds
 * tokens only while each second's total stays within the limit, so whatever the number of containers
 * no second's count ever passes it. The same write may reserve tokens in the minute's later seconds
 * (a quiet task's look-ahead), each only while that second stays within half the limit.
 */
export interface RateLease {
  /** Tokens added to the second for the caller (0: not even `need` remained). */
  granted: number;
  /** The second's count after the grant, or as found when nothing was granted. */
  used: number;
  /** Later seconds in which `ahead.tokens` were reserved for the caller too. */
  reserved: number[];
}

/** Tokens to reserve in each of the seconds after the leased one, through `through` (same minute). */
export interface LookAhead {
  tokens: number;
  through: number;
}

/** Window items outlive their minute by this much, then DynamoDB's TTL removes them. */
const WINDOW_TTL_SECONDS = 60;
/** Conditional writes lost to other containers' leases before the caller is told nothing is left. */
const MAX_ATTEMPTS = 4;

export const minuteOfSecond = (second: number) => Math.floor(second / 60);
/** The attribute that counts a second in its minute's item. */
export const secondAttribute = (second: number) => `s${second % 60}`;

/** Look-ahead tokens fill a later second to at most this share of the limit: the rest stays on demand. */
export const aheadRoom = (limit: number) => Math.floor(limit / 2);

/** A count the failed condition returned (raw attribute values: errors are not unmarshalled). */
function countOf(item: unknown, attribute: string): number {
  const v = (item as Record<string, unknown> | undefined)?.[attribute];
  if (typeof v === 'number') return v;
  const n = (v as { N?: string } | undefined)?.N;
  return n === undefined ? 0 : Number(n);
}

/**
 * AP-R4: leases tokens of a task's second. Adds `want` to the second's count if it stays within
 * `limit` (`attribute_not_exists(s) OR s <= limit - want`) and, with `ahead`, `ahead.tokens` to each
 * later second through `ahead.through` if each stays within half the limit; when that fails, the
 * failed condition returns the item (`ReturnValuesOnConditionCheckFailure`, no read) and the lease is
 * tried again with what it shows room for: the remainder of the second if it covers `need`, and only
 * the later seconds that had room. One write per lease; more only near the limit or when other
 * containers lease at the same moment.
 */
export async function leaseRateTokens(
  taskId: number,
  second: number,
  need: number,
  want: number,
  limit: number,
  ahead?: LookAhead,
  signal?: AbortSignal,
  /** Which item of a split second (its limit the item's share). */
  shard = 0,
): Promise<RateLease> {
  let take = want;
  let later = ahead ? laterSeconds(second, ahead.through) : [];
  let seen = 0;
  const now = secondAttribute(second);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const names: Record<string, string> = { '#ttl': 'ttl', '#s': now };
    const adds = ['#s :n'];
    const conditions = ['(attribute_not_exists(#s) OR #s <= :room)'];
    later.forEach((s, i) => {
      names[`#a${i}`] = secondAttribute(s);
      adds.push(`#a${i} :a`);
      conditions.push(`(attribute_not_exists(#a${i}) OR #a${i} <= :aroom)`);
    });
    try {
      const out = await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.rateWindow(taskId, minuteOfSecond(second), shard),
          UpdateExpression: `ADD ${adds.join(', ')} SET entity = :e, schema_version = :v, #ttl = :ttl`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: {
            ':n': take,
            ':room': limit - take,
            ...(later.length > 0 && ahead
              ? { ':a': ahead.tokens, ':aroom': aheadRoom(limit) - ahead.tokens }
              : {}),
            ':e': 'rate_window',
            ':v': SCHEMA_VERSION,
            ':ttl': (minuteOfSecond(second) + 1) * 60 + WINDOW_TTL_SECONDS,
          },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        { abortSignal: signal },
      );
      return { granted: take, used: countOf(out.Attributes, now) || take, reserved: later };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const item = (err as { Item?: unknown }).Item;
      seen = countOf(item, now);
      const rest = limit - seen;
      if (rest < need) return { granted: 0, used: seen, reserved: [] };
      take = Math.min(take, rest);
      later = ahead
        ? later.filter((s) => countOf(item, secondAttribute(s)) <= aheadRoom(limit) - ahead.tokens)
        : [];
    }
  }
  return { granted: 0, used: seen, reserved: [] };
}

/** The seconds after `second` through `through`, within `second`'s minute. */
export function laterSeconds(second: number, through: number): number[] {
  const last = Math.min(through, (minuteOfSecond(second) + 1) * 60 - 1);
  return Array.from({ length: Math.max(0, last - second) }, (_, i) => second + 1 + i);
}
