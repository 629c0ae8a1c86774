import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/**
 * Receipts of alarm reports sent with a client-chosen `uuid` (API guide §7.1): the only table access of
 * the ingestion hot path besides the cached task read, and only for clients that opt in.
 *
 * A receipt is written (conditionally: the first task to claim a uuid keeps it) before the alarm is
 * queued, so a report refused because another task holds the uuid queues nothing; it is marked
 * `queued` once the alarm is on the queue, so a repeat of a report whose queueing failed queues it
 * again instead of answering for an alarm that was never accepted.
 */
export interface ReportReceipt {
  uuid: string;
  task_id: number;
  report_time: string;
  /** Unix seconds after which the receipt no longer counts (DynamoDB TTL removes it later). */
  ttl: number;
  /** The alarm is known to be on the queue. */
  queued: boolean;
}

function receiptOf(item: Record<string, unknown>): ReportReceipt {
  return {
    uuid: item.uuid as string,
    task_id: item.task_id as number,
    report_time: item.report_time as string,
    ttl: item.ttl as number,
    // Receipts written before `queued` existed were written after queueing.
    queued: item.queued !== false,
  };
}

/** AP-R1: the receipt of a uuid, if one exists and has not expired. */
export async function getReportReceipt(
  uuid: string,
  now: number,
  consistent = false,
): Promise<ReportReceipt | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.reportReceipt(uuid), ConsistentRead: consistent }),
  );
  const item = out.Item;
  if (!item || item.ttl <= now) return undefined;
  return receiptOf(item);
}

/**
 * AP-R2: records a receipt unless a live one exists (PutItem, `attribute_not_exists(pk) OR ttl <=
 * now`). Returns the receipt that holds: ours, or the one of a concurrent report that won.
 */
export async function putReportReceipt(receipt: ReportReceipt, now: number): Promise<ReportReceipt> {
  try {
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.reportReceipt(receipt.uuid),
          entity: 'report_receipt',
          schema_version: SCHEMA_VERSION,
          ...receipt,
        },
        ConditionExpression: 'attribute_not_exists(pk) OR #ttl <= :now',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':now': now },
      }),
    );
    return receipt;
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const out = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.reportReceipt(receipt.uuid), ConsistentRead: true }),
    );
    if (!out.Item) throw err;
    return receiptOf(out.Item);
  }
}

/** AP-R3: the receipt's alarm is on the queue (an UpdateItem that never creates the receipt). */
export async function markReceiptQueued(uuid: string): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.reportReceipt(uuid),
        UpdateExpression: 'SET queued = :t',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':t': true },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}
