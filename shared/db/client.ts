import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { config } from '../config/env.ts';

let doc: DynamoDBDocumentClient | undefined;

/** The document client for the single table (created on first use, reused across invocations). */
export function db(): DynamoDBDocumentClient {
  if (!doc) {
    const cfg = config();
    const client = new DynamoDBClient({
      region: cfg.region,
      ...(cfg.dynamoEndpoint
        ? { endpoint: cfg.dynamoEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
        : {}),
    });
    doc = DynamoDBDocumentClient.from(client, {
      marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
    });
  }
  return doc;
}

export function tableName(): string {
  return config().tableName;
}

/** Every item carries its entity type and a schema version. */
export const SCHEMA_VERSION = 1;

export function isConditionFailure(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name;
  return name === 'ConditionalCheckFailedException';
}

/** A transaction cancelled because one of its conditions failed (not throttling or a conflict). */
export function transactionConditionFailed(err: unknown): number[] {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | null;
  if (e?.name !== 'TransactionCanceledException' || !e.CancellationReasons) return [];
  return e.CancellationReasons.flatMap((r, i) => (r.Code === 'ConditionalCheckFailed' ? [i] : []));
}

const BOOKKEEPING = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'entity', 'schema_version'];

/** An entity's own fields from its item: keys and bookkeeping attributes (and any `extra`) removed. */
export function fromItem<T>(item: Record<string, unknown>, ...extra: string[]): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) if (!BOOKKEEPING.includes(k) && !extra.includes(k)) out[k] = v;
  return out as T;
}

/** Every item of a Query on the table (all pages). */
export async function queryAll(
  input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new QueryCommand({ ...input, TableName: tableName(), ExclusiveStartKey: start }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
