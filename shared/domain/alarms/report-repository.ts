import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';

/**
 * Receipts of alarm reports sent with a client-chosen `uuid` (behavior 6.1): the only table access of
 * the ingestion hot path besides the cached task read, and only for clients that opt in.
 */
export interface ReportReceipt {
  uuid: string;
  task_id: number;
  report_time: string;
  /** Unix seconds after which the receipt no longer counts (DynamoDB TTL removes it later). */
  ttl: number;
}

/** AP-R1: the receipt of a uuid, if one exists and has not expired. */
export async function getReportReceipt(uuid: string, now: number): Promise<ReportReceipt | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: keys.reportReceipt(uuid) }));
  const item = out.Item;
  if (!item || item.ttl <= now) return undefined;
  return { uuid: item.uuid, task_id: item.task_id, report_time: item.report_time, ttl: item.ttl };
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
    return {
      uuid: out.Item.uuid,
      task_id: out.Item.task_id,
      report_time: out.Item.report_time,
      ttl: out.Item.ttl,
    };
  }
}
