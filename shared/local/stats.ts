import { enqueued } from '../messaging/sqs.ts';
import type { AwsService, SdkClient } from '../platform.ts';

/**
 * What the local stack spent, for `npm run bench:*` (TOCSIN_STATS=1; off otherwise): every DynamoDB
 * and SQS call by command, the capacity units DynamoDB consumed (`ReturnConsumedCapacity`), and every
 * handler invocation with its duration. Each thread of the stack (the API, each consumer "container")
 * counts its own, on the clients the local adapter readies (platform.ts); the stack merges them on
 * `GET /_local/stats`.
 */
export interface Counter {
  calls: number;
  /** Capacity units (DynamoDB), or 0. */
  units: number;
}

export interface Stats {
  /**
   * By command and entity (`PutItem ALARM`; calls DynamoDB refused, e.g. a failed condition, apart as
   * `PutItem ALARM refused`); `items`: items a write call wrote.
   */
  dynamodb: Record<string, Counter & { read: number; write: number; items: number }>;
  sqs: Record<string, Counter & { messages: number }>;
  /** Handler invocations: count and total duration (ms). */
  invocations: Record<string, { count: number; ms: number }>;
  /**
   * Messages put on a queue one per handler invocation (`enqueue`: the report endpoints) and the
   * SendMessageBatch requests that carried them here (on AWS: one request per message).
   */
  enqueued: { messages: number; requests: number };
  /**
   * Not counted: every SQS request goes over HTTP to the emulator (a field of earlier figures, left
   * for their readers).
   */
  sqsInThread?: number;
}

const empty = (): Stats => ({
  dynamodb: {},
  sqs: {},
  invocations: {},
  enqueued: { messages: 0, requests: 0 },
});

/** The counter of `key` in `record`, created on first use. */
function counter<T>(record: Record<string, T>, key: string, init: () => T): T {
  const found = record[key];
  if (found) return found;
  record[key] = init();
  return record[key];
}
const ddbInit = () => ({ calls: 0, units: 0, read: 0, write: 0, items: 0 });
const sqsInit = () => ({ calls: 0, units: 0, messages: 0 });
const fnInit = () => ({ count: 0, ms: 0 });
let stats = empty();

export const statsEnabled = () => process.env.TOCSIN_STATS === '1';

const READS = new Set(['GetItemCommand', 'QueryCommand', 'BatchGetItemCommand', 'TransactGetItemsCommand']);

/** Approximate stored size of a value (attribute names + values), bytes. */
const sizeOf = (v: unknown) => Buffer.byteLength(JSON.stringify(v ?? {}), 'utf8');

/**
 * DynamoDB Local under-reports transactions (about 2 units per call whatever it holds): they are
 * charged here by the AWS rule, 2 WCU per item per started KB.
 */
function transactionUnits(input: Record<string, unknown>): number {
  let units = 0;
  for (const t of (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[]) {
    const op = Object.values(t)[0] ?? {};
    const bytes = op.Item ? sizeOf(op.Item) : sizeOf(op.Key) + sizeOf(op.ExpressionAttributeValues);
    units += 2 * Math.max(1, Math.ceil(bytes / 1024));
  }
  return units;
}

/**
 * DynamoDB Local reports nothing for BatchExecuteStatement: its writes (PartiQL INSERTs) are charged
 * here by the AWS rule, 1 WCU per item per started KB, whether the item was inserted or found to
 * exist (a failed condition is charged as the write).
 */
export function statementUnits(input: Record<string, unknown>): number {
  let units = 0;
  for (const st of (input.Statements ?? []) as { Statement?: string; Parameters?: unknown[] }[]) {
    const names = [...(st.Statement ?? '').matchAll(/'(\w+)':/g)].reduce((n, m) => n + m[1].length, 0);
    units += Math.max(1, Math.ceil((names + sizeOf(st.Parameters)) / 1024));
  }
  return units;
}

/** Items a write call writes (puts, updates, deletes, inserts), or 0 for a read. */
export function itemsWritten(command: string, input: Record<string, unknown>): number {
  if (READS.has(command)) return 0;
  if (command === 'TransactWriteItemsCommand')
    return (input.TransactItems as unknown[] | undefined)?.length ?? 0;
  if (command === 'BatchExecuteStatementCommand')
    return (input.Statements as unknown[] | undefined)?.length ?? 0;
  if (command === 'BatchWriteItemCommand')
    return Object.values((input.RequestItems ?? {}) as Record<string, unknown[]>).reduce(
      (n, l) => n + l.length,
      0,
    );
  return 1;
}

/**
 * The least a read is charged on AWS, which DynamoDB Local does not report: a read that finds nothing
 * still costs 1 unit (consistent) or 0.5 (eventually consistent) per key of a GetItem or BatchGetItem
 * and per Query.
 */
function minimumReadUnits(command: string, input: Record<string, unknown>): number {
  const unit = (consistent: unknown) => (consistent ? 1 : 0.5);
  if (command === 'BatchGetItemCommand') {
    const tables = Object.values(
      (input.RequestItems ?? {}) as Record<string, { Keys?: unknown[]; ConsistentRead?: boolean }>,
    );
    return tables.reduce((sum, t) => sum + (t.Keys?.length ?? 0) * unit(t.ConsistentRead), 0);
  }
  if (command === 'GetItemCommand' || command === 'QueryCommand') return unit(input.ConsistentRead);
  return 0;
}

/** What a DynamoDB call is about: the prefix of its (first) partition key, e.g. `ALARM`, `WHLOG`. */
function entityOf(input: Record<string, unknown>): string {
  const pkOf = (o: unknown) => (o as { pk?: unknown } | undefined)?.pk;
  let pk =
    pkOf(input.Key) ??
    pkOf(input.Item) ??
    (input.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[':pk'];
  const tx = input.TransactItems as Record<string, { Key?: unknown; Item?: unknown }>[] | undefined;
  if (!pk && tx?.[0]) {
    const op = Object.values(tx[0])[0];
    pk = pkOf(op?.Key) ?? pkOf(op?.Item);
  }
  const statements = input.Statements as { Parameters?: unknown[] }[] | undefined;
  if (!pk && statements) pk = statements[0]?.Parameters?.[0];
  const batch = input.RequestItems as Record<string, unknown> | undefined;
  if (!pk && batch) {
    const first = Object.values(batch)[0] as { PutRequest?: { Item?: unknown } }[] | { Keys?: unknown[] };
    pk = Array.isArray(first) ? pkOf(first[0]?.PutRequest?.Item) : pkOf(first?.Keys?.[0]);
  }
  return typeof pk === 'string' ? pk.split('#')[0] : '?';
}

/** Counts a client's calls while TOCSIN_STATS=1 (DynamoDB's and SQS's; other services' are not counted). */
export function countCalls(client: SdkClient, service: AwsService): void {
  if (!statsEnabled()) return;
  if (service === 'dynamodb') countDynamoCalls(client);
  if (service === 'sqs') countSqsCalls(client);
}

/** Counts DynamoDB calls by command and entity, with the capacity units AWS would charge. */
function countDynamoCalls(client: SdkClient): void {
  client.middlewareStack.add(
    (next: Next, context: { commandName?: string }) => async (args: { input: unknown }) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const command = String(context.commandName ?? 'Unknown');
      let out: { output: unknown };
      try {
        out = await next(args);
      } catch (err) {
        // A refused call is a request too (a lost conditional commit, say): counted apart, no units.
        counter(stats.dynamodb, `${command.replace('Command', '')} ${entityOf(input)} refused`, ddbInit)
          .calls++;
        throw err;
      }
      const consumed = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      const list = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) as {
        CapacityUnits?: number;
      }[];
      let units = list.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      if (command === 'TransactWriteItemsCommand') units = transactionUnits(input);
      if (command === 'BatchExecuteStatementCommand') units = statementUnits(input);
      units = Math.max(units, minimumReadUnits(command, input));
      const c = counter(stats.dynamodb, `${command.replace('Command', '')} ${entityOf(input)}`, ddbInit);
      c.calls++;
      c.units += units;
      if (READS.has(command)) c.read += units;
      else c.write += units;
      c.items += itemsWritten(command, input);
      return out;
    },
    { step: 'initialize', name: 'tocsinStats' },
  );
}

type Next = (args: { input: unknown }) => Promise<{ output: unknown }>;

/** Counts the calls of an SQS client (the service's, and the local pollers' own) while TOCSIN_STATS=1. */
export function countSqsCalls(client: SdkClient): void {
  if (!statsEnabled()) return;
  client.middlewareStack.add(
    (next: Next, context: { commandName?: string }) => async (args: { input: unknown }) => {
      const out = await next(args);
      const command = String(context.commandName ?? 'Unknown');
      const input = args.input as { Entries?: unknown[] };
      const output = out.output as { Messages?: unknown[] };
      const c = counter(stats.sqs, command, sqsInit);
      c.calls++;
      c.messages += input.Entries?.length ?? output.Messages?.length ?? 1;
      return out;
    },
    { step: 'initialize', name: 'tocsinStats' },
  );
}

/** Counts one handler invocation (a Lambda request, billed for its duration). */
export function recordInvocation(fn: string, ms: number): void {
  if (!statsEnabled()) return;
  const c = counter(stats.invocations, fn, fnInit);
  c.count++;
  c.ms += ms;
}

/** This thread's counts; `reset` starts counting afresh. */
export function takeStats(reset = false): Stats {
  const out = { ...stats, enqueued: { ...enqueued } };
  if (reset) {
    stats = empty();
    enqueued.messages = 0;
    enqueued.requests = 0;
  }
  return out;
}

/** The sum of several threads' counts. */
export function mergeStats(all: Stats[]): Stats {
  const out = empty();
  for (const s of all) {
    for (const [k, v] of Object.entries(s.dynamodb)) {
      const c = counter(out.dynamodb, k, ddbInit);
      c.calls += v.calls;
      c.units += v.units;
      c.read += v.read;
      c.write += v.write;
      c.items += v.items ?? 0;
    }
    for (const [k, v] of Object.entries(s.sqs)) {
      const c = counter(out.sqs, k, sqsInit);
      c.calls += v.calls;
      c.messages += v.messages;
    }
    for (const [k, v] of Object.entries(s.invocations)) {
      const c = counter(out.invocations, k, fnInit);
      c.count += v.count;
      c.ms += v.ms;
    }
    out.enqueued.messages += s.enqueued.messages;
    out.enqueued.requests += s.enqueued.requests;
  }
  return out;
}
