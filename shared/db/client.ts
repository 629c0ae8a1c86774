import { createHash } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchExecuteStatementCommand,
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  QueryCommand,
  type TransactWriteCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { config } from '../config/env.ts';
import { sdkClient } from '../platform.ts';

let doc: DynamoDBDocumentClient | undefined;

/** The document client for the single table (created on first use, reused across invocations). */
export function db(): DynamoDBDocumentClient {
  if (!doc) {
    const cfg = config();
    const client = sdkClient(
      'dynamodb',
      (s) => new DynamoDBClient({ region: cfg.region, ...s }),
      cfg.dynamoEndpoint,
    );
    doc = DynamoDBDocumentClient.from(client, {
      marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
    });
  }
  return doc;
}

/** One item of a TransactWriteItems request (Put, Update, Delete or ConditionCheck). */
export type TransactItem = NonNullable<
  ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']
>[number];

export function tableName(): string {
  return config().tableName;
}

/** Every item carries its entity type and a schema version. */
export const SCHEMA_VERSION = 1;

/** A short id derived from what an item holds: a write repeated with the same content hits the same key. */
export function contentId(parts: string[]): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 12);
}

/**
 * A log item's rows, stored compressed (`logz`: raw DEFLATE of their JSON): a batch's rows repeat
 * their shape and ids, and shrink four- to fivefold, so a log item of a batch costs one write unit
 * instead of two or three.
 */
export function packLog(rows: unknown[]): { logz: Uint8Array } {
  return { logz: deflateRawSync(JSON.stringify(rows), LOG_DEFLATE) };
}

/**
 * A 4 KB window and a small hash table: a log item's JSON is a few KB, so it compresses as small as
 * with zlib's defaults (32 KB window), at a third of the CPU (most of the defaults' cost is setting up
 * their 256 KB of state per call). Any inflater reads it (its window is at most the default).
 */
const LOG_DEFLATE = { windowBits: 12, memLevel: 5 };

/** The rows of a log item: compressed (`logz`), or as JSON text (`log`, items written before). */
export function unpackLog<T>(item: Record<string, unknown>): T[] {
  const z = item.logz;
  const text = z instanceof Uint8Array ? inflateRawSync(z).toString('utf8') : (item.log as string);
  return JSON.parse(text) as T[];
}

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

const BOOKKEEPING = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'entity', 'schema_version'];

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

/**
 * Puts items with BatchWriteItem (25 per call, in parallel), retrying what DynamoDB left unprocessed
 * with backoff; throws when items stay unprocessed. Unconditional: for items written once or
 * idempotent to write again.
 */
export async function putItems(items: Record<string, unknown>[], what = 'items'): Promise<void> {
  await batchWrite(
    items.map((Item) => ({ PutRequest: { Item } })),
    what,
  );
}

/** Deletes items by key with BatchWriteItem, as putItems puts them (deleting what is gone is no error). */
export async function deleteItems(keys: { pk: string; sk: string }[], what = 'items'): Promise<void> {
  await batchWrite(
    keys.map((Key) => ({ DeleteRequest: { Key } })),
    what,
  );
}

type WriteRequest =
  | { PutRequest: { Item: Record<string, unknown> } }
  | { DeleteRequest: { Key: Record<string, unknown> } };

async function batchWrite(all: WriteRequest[], what: string): Promise<void> {
  const chunks: WriteRequest[][] = [];
  for (let i = 0; i < all.length; i += 25) chunks.push(all.slice(i, i + 25));
  await Promise.all(
    chunks.map(async (chunk) => {
      let requests = chunk;
      for (let round = 0; requests.length > 0; round++) {
        const out = await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: requests } }));
        requests = (out.UnprocessedItems?.[tableName()] ?? []) as WriteRequest[];
        if (requests.length === 0) break;
        if (round >= 6) throw new Error(`${what}: DynamoDB kept ${requests.length} item(s) unprocessed`);
        await new Promise((r) => setTimeout(r, 25 * 2 ** round));
      }
    }),
  );
}

/** Statement errors of BatchExecuteStatement worth another try (the statement did nothing). */
const RETRYABLE_STATEMENT_ERRORS = new Set([
  'ProvisionedThroughputExceeded',
  'ThrottlingError',
  'RequestLimitExceeded',
  'InternalServerError',
  'TransactionConflict',
]);

/**
 * Inserts items unless an item with the same key exists: a PartiQL INSERT each, 25 per
 * BatchExecuteStatement (in parallel). Returns, per item, whether it was inserted (false: its key
 * existed). A conditional PutItem per item without a call per item, and without reading the keys
 * first: an existing key costs the write it would have been, no read. Statements throttled or in a
 * transaction's way are tried again with backoff; any other statement error throws.
 */
export async function insertItems(items: Record<string, unknown>[], what = 'items'): Promise<boolean[]> {
  const inserted: boolean[] = new Array(items.length).fill(false);
  const chunks: number[][] = [];
  for (let i = 0; i < items.length; i += 25) chunks.push(items.slice(i, i + 25).map((_, j) => i + j));
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending = chunk;
      for (let round = 0; pending.length > 0; round++) {
        const out = await db().send(
          new BatchExecuteStatementCommand({ Statements: pending.map((i) => insertStatement(items[i])) }),
        );
        const again: number[] = [];
        for (const [k, i] of pending.entries()) {
          const code = out.Responses?.[k]?.Error?.Code;
          if (!code) inserted[i] = true;
          else if (code === 'DuplicateItem') inserted[i] = false;
          else if (RETRYABLE_STATEMENT_ERRORS.has(code)) again.push(i);
          else throw new Error(`${what}: insert failed: ${code}`);
        }
        pending = again;
        if (pending.length === 0) break;
        if (round >= 6) throw new Error(`${what}: DynamoDB kept refusing ${pending.length} insert(s)`);
        await new Promise((r) => setTimeout(r, 25 * 2 ** round));
      }
    }),
  );
  return inserted;
}

/** `INSERT INTO "table" VALUE {'a': ?, ...}` with the item's defined attributes as parameters. */
function insertStatement(item: Record<string, unknown>): { Statement: string; Parameters: unknown[] } {
  const names = Object.keys(item).filter((k) => item[k] !== undefined);
  for (const n of names)
    if (!/^[A-Za-z0-9_]+$/.test(n)) throw new Error(`attribute name not insertable: ${n}`);
  return {
    Statement: `INSERT INTO "${tableName()}" VALUE {${names.map((n) => `'${n}': ?`).join(', ')}}`,
    Parameters: names.map((n) => item[n]),
  };
}

/**
 * Reads items by key with BatchGetItem (100 per call, in parallel), retrying what DynamoDB left
 * unprocessed; missing items are simply absent from the result.
 */
export async function getItems(
  keys: { pk: string; sk: string }[],
  opts: { consistent?: boolean; projection?: string; what?: string } = {},
): Promise<Record<string, unknown>[]> {
  const chunks: { pk: string; sk: string }[][] = [];
  for (let i = 0; i < keys.length; i += 100) chunks.push(keys.slice(i, i + 100));
  const found: Record<string, unknown>[] = [];
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending: { pk: string; sk: string }[] = chunk;
      for (let round = 0; pending.length > 0; round++) {
        const out = await db().send(
          new BatchGetCommand({
            RequestItems: {
              [tableName()]: {
                Keys: pending,
                ConsistentRead: opts.consistent,
                ...(opts.projection ? { ProjectionExpression: opts.projection } : {}),
              },
            },
          }),
        );
        found.push(...(out.Responses?.[tableName()] ?? []));
        pending = (out.UnprocessedKeys?.[tableName()]?.Keys ?? []) as { pk: string; sk: string }[];
        if (pending.length === 0) break;
        if (round >= 8)
          throw new Error(`${opts.what ?? 'items'}: DynamoDB kept ${pending.length} key(s) unprocessed`);
        await new Promise((r) => setTimeout(r, 20 * 2 ** round));
      }
    }),
  );
  return found;
}
