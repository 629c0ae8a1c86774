import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../db/client.ts';

/**
 * The day-partitioned logs of a task (the webhook delivery log `WHLOG#`, the notification log
 * `NLOG#`): one partition per task and UTC day, items sorted by `<at ms, 13 digits>#<content id>`.
 * A log may also ride in another log's items (a batch's webhook deliveries in its alarm log item),
 * read from that partition with only that attribute. Both partitions of a day are read as one sorted
 * stream.
 */
export interface DayLogOptions {
  descending?: boolean;
  /** Sort keys from `from` to `to` (both included). */
  range?: { from?: string; to?: string };
  /** Items per Query page (read as far as the caller consumes). */
  pageSize?: number;
}

/**
 * A day's items of the log partition `pk` in sort key order, merged (when `carried` is given) with
 * the items of `carried.pk` that hold the log in `carried.attribute` (the attribute's map spread over
 * the item's `sk` and `task_id`; items without it are filtered out by the Query).
 */
export async function* dayLogItems(
  pk: string,
  opts: DayLogOptions = {},
  carried?: { pk: string; attribute: string },
): AsyncGenerator<Record<string, unknown>> {
  const { from, to } = opts.range ?? {};
  const condition = `pk = :pk${from && to ? ' AND sk BETWEEN :from AND :to' : from ? ' AND sk >= :from' : to ? ' AND sk <= :to' : ''}`;
  async function* partition(key: string, attribute?: string): AsyncGenerator<Record<string, unknown>> {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: condition,
          ExpressionAttributeValues: {
            ':pk': key,
            ...(from ? { ':from': from } : {}),
            ...(to ? { ':to': to } : {}),
          },
          ...(attribute
            ? {
                FilterExpression: 'attribute_exists(#log)',
                ProjectionExpression: 'sk, task_id, #log',
                ExpressionAttributeNames: { '#log': attribute },
              }
            : {}),
          ScanIndexForward: !opts.descending,
          ...(opts.pageSize ? { Limit: opts.pageSize } : {}),
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? [])
        yield attribute ? { sk: item.sk, task_id: item.task_id, ...(item[attribute] as object) } : item;
      start = page.LastEvaluatedKey;
    } while (start);
  }
  if (!carried) {
    yield* partition(pk);
    return;
  }
  const own = partition(pk);
  const other = partition(carried.pk, carried.attribute);
  const before = (x: unknown, y: unknown) =>
    opts.descending ? (x as string) > (y as string) : (x as string) < (y as string);
  let [a, b] = await Promise.all([own.next(), other.next()]);
  while (!a.done || !b.done) {
    if (!a.done && (b.done || before(a.value.sk, b.value.sk))) {
      yield a.value;
      a = await own.next();
    } else if (!b.done) {
      yield b.value;
      b = await other.next();
    }
  }
}
