import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, fromItem, tableName } from '../../db/client.ts';
import { keys, webhookLogDayOf } from '../../db/keys.ts';
import { dayLogItems, fromLog, LOG_DAYS, type WebhookAttempt } from './repository.ts';

/**
 * A task's webhook attempts page by page, newest first (AP-H5, KEY-DESIGN.md), for the deliveries
 * listing: its attempts of their own and its delivery log, each with a position to go on from. How
 * attempts are stored, and the other reads: repository.ts.
 */

/** A position in a task's attempts of their own (AP-H5): the index sort key of the last one read. */
export type OwnAttemptsPosition = string;

/** A position in a task's delivery log (AP-H5): a log item (day, sort key) and its entries read. */
export interface DeliveryLogPosition {
  day: number;
  sk: string;
  /** Entries of that item already read (newest first). */
  read: number;
}

/** One attempt of a page, with its order key (newest first) and the position just after it. */
export interface PagedAttempt<P> {
  attempt: WebhookAttempt;
  /** Milliseconds the source is sorted by: the attempt's time, or its log item's first attempt. */
  orderMs: number;
  after: P;
}

export interface AttemptsPage<P> {
  rows: PagedAttempt<P>[];
  /** Nothing lies beyond the last row. */
  done: boolean;
}

const orderMsOf = (sortKey: string) => Number(sortKey.slice(0, 13));

/**
 * AP-H5 (own attempts): a task's attempts of their own, newest first, from just after `after`: Query
 * gsi1 `WHTASK#<task id>` descending with `gsi1sk < after`, at most `limit`.
 */
export async function pageOwnAttemptsOfTask(
  taskId: number,
  limit: number,
  after?: OwnAttemptsPosition,
): Promise<AttemptsPage<OwnAttemptsPosition>> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'gsi1',
      KeyConditionExpression: after ? 'gsi1pk = :pk AND gsi1sk < :after' : 'gsi1pk = :pk',
      ExpressionAttributeValues: {
        ':pk': keys.webhookAttemptsOfTask(taskId).gsi1pk,
        ...(after ? { ':after': after } : {}),
      },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  const rows = (out.Items ?? []).map((item) => ({
    attempt: fromItem<WebhookAttempt>(item, 'ttl'),
    orderMs: orderMsOf(item.gsi1sk as string),
    after: item.gsi1sk as string,
  }));
  return { rows, done: !out.LastEvaluatedKey };
}

/**
 * AP-H5 (delivery log): a task's delivery log entries, newest item first (entries of an item newest
 * first), from just after `after`: its day's items descending (`sk <= after.sk` on the day of
 * `after`; dayLogItems), day by day back to the oldest day the log keeps, until `limit` entries.
 */
export async function pageDeliveryLogOfTask(
  taskId: number,
  limit: number,
  nowMs: number,
  after?: DeliveryLogPosition,
): Promise<AttemptsPage<DeliveryLogPosition>> {
  const rows: PagedAttempt<DeliveryLogPosition>[] = [];
  const today = webhookLogDayOf(nowMs);
  for (let day = Math.min(after?.day ?? today, today); day > today - LOG_DAYS; day--) {
    const resume = after && after.day === day ? after : undefined;
    const range = resume ? { to: resume.sk } : undefined;
    for await (const item of dayLogItems(taskId, day, { descending: true, range, pageSize: limit })) {
      const sk = item.sk as string;
      const entries = fromLog(item).sort((a, b) => b.at_ms - a.at_ms);
      const from = resume && sk === resume.sk ? resume.read : 0;
      for (let i = from; i < entries.length; i++) {
        rows.push({ attempt: entries[i], orderMs: orderMsOf(sk), after: { day, sk, read: i + 1 } });
        if (rows.length >= limit) return { rows, done: false };
      }
    }
  }
  return { rows, done: true };
}
