import { AsyncLocalStorage } from 'node:async_hooks';
import { openSync, writeSync } from 'node:fs';
import { table as tableDef } from '../contracts/table.ts';
import { partitionPrefix } from '../db/keys.ts';
import type { SdkClient } from '../platform.ts';

/**
 * Recording of the AWS calls each function makes, for the least-privilege proof (docs/aws-operations.md,
 * "Least privilege"): with TOCSIN_CALL_LOG set to a file, every client the local adapter readies
 * (platform.ts) appends one JSON line per IAM action a call needs, naming the function it was made
 * under. The local runtime sets the function (asFunction: the HTTP adapter, the queue pollers, the
 * schedule); calls made outside any (test code reading the table) are not recorded. Without the
 * variable nothing is added to any client and asFunction simply runs its work.
 */
export const CALL_LOG_VARIABLE = 'TOCSIN_CALL_LOG';

/** One IAM authorization a call needed. */
export interface CallRecord {
  /** The function's trigger: a route key (`POST /alarm/report`, `$default`), `queue:<name>` or `schedule`. */
  fn: string;
  /** The API operation (`TransactWriteItems`, `SendMessageBatch`). */
  op: string;
  /** The IAM action it needs (`dynamodb:PutItem`, `sqs:SendMessage`). */
  action: string;
  /**
   * What it acts on, by its name in the stack: `table`, `table/index/<name>`, `queue/<name>`,
   * `dlq/<name>`, `secret/seal-key`, `secret/notify-providers`, `secret/sso-client`, `sns/phone`,
   * `ses/<from>`, `sms-voice/<origination identity>`; anything unknown as the raw name or URL.
   */
  resource: string;
  /** DynamoDB: the partition-key prefixes it touches (`TASK#`, or a whole constant value such as `DEPTS`). */
  keys?: string[];
}

const enabled = (): boolean => Boolean(process.env[CALL_LOG_VARIABLE]);

let current: AsyncLocalStorage<string> | undefined;

/** Runs `work` as function `fn` (a trigger, see CallRecord.fn); only while recording does it keep track. */
export function asFunction<T>(fn: string, work: () => T): T {
  if (!enabled()) return work();
  current ??= new AsyncLocalStorage<string>();
  return current.run(fn, work);
}

/** The function the current work runs as, while recording. */
export function currentFunction(): string | undefined {
  return current?.getStore();
}

/**
 * Records the calls of `client` while TOCSIN_CALL_LOG is set (nothing is added otherwise). `fn` names
 * the function for calls made outside asFunction: a local queue poller stands for the event source
 * mapping, which polls with the consumer's role.
 */
export function recordCalls<T extends SdkClient>(client: T, fn?: string): T {
  if (!enabled()) return client;
  client.middlewareStack.add(
    (
      next: (args: { input: unknown }) => Promise<unknown>,
      context: { clientName?: string; commandName?: string },
    ) =>
      async (args: { input: unknown }) => {
        const name = fn ?? currentFunction();
        if (name !== undefined) {
          const service = (context.clientName ?? '').replace(/Client$/, '');
          const op = (context.commandName ?? '').replace(/Command$/, '');
          for (const r of describeCall(service, op, args.input as Input)) write({ fn: name, op, ...r });
        }
        return next(args);
      },
    { step: 'initialize', name: 'tocsinCallRecord' },
  );
  return client;
}

let fd: number | undefined;

function write(record: CallRecord): void {
  fd ??= openSync(process.env[CALL_LOG_VARIABLE] as string, 'a');
  // One write per line on a file opened for appending: lines of several threads never interleave.
  writeSync(fd, `${JSON.stringify(record)}\n`);
}

// biome-ignore lint/suspicious/noExplicitAny: SDK inputs of every service
type Input = Record<string, any>;
type Described = Omit<CallRecord, 'fn' | 'op'>;

/**
 * The IAM authorizations one API call needs. A batch (BatchGetItem, BatchWriteItem) is one per table,
 * with the keys of all its items; a transaction or a batch of PartiQL statements is authorized item by
 * item (statement by statement), so it needs one per item.
 */
export function describeCall(service: string, op: string, input: Input): Described[] {
  switch (service) {
    case 'DynamoDB':
      return describeDynamo(op, input);
    case 'SQS':
      return [{ action: `sqs:${op.replace(/Batch$/, '')}`, resource: queueName(input.QueueUrl) }];
    case 'SecretsManager':
      return [{ action: `secretsmanager:${op}`, resource: secretName(input.SecretId) }];
    case 'SNS':
      return [{ action: `sns:${op}`, resource: input.PhoneNumber ? 'sns/phone' : String(input.TopicArn) }];
    case 'SESv2':
      return [{ action: `ses:${op}`, resource: `ses/${input.FromEmailAddress ?? ''}` }];
    case 'PinpointSMSVoiceV2':
      return [{ action: `sms-voice:${op}`, resource: `sms-voice/${input.OriginationIdentity ?? ''}` }];
    default:
      return [{ action: `${service.toLowerCase()}:${op}`, resource: '*' }];
  }
}

function describeDynamo(op: string, input: Input): Described[] {
  const out = new Map<string, Described>();
  const add = (action: string, tableName: string, index: string | undefined, pks: unknown[]) => {
    const resource = tableResource(tableName) + (index ? `/index/${index}` : '');
    const id = BATCHES.has(op) ? `${action} ${resource}` : String(out.size);
    const entry = out.get(id) ?? { action: `dynamodb:${action}`, resource, keys: [] };
    for (const pk of pks) {
      const prefix = typeof pk === 'string' ? partitionPrefix(pk) : '?';
      if (!entry.keys?.includes(prefix)) entry.keys?.push(prefix);
    }
    out.set(id, entry);
  };
  const pk = (key: Input | undefined) => attr(key?.[tableDef.partitionKey]);
  switch (op) {
    case 'GetItem':
    case 'DeleteItem':
    case 'UpdateItem':
      add(op, input.TableName, undefined, [pk(input.Key)]);
      break;
    case 'PutItem':
      add(op, input.TableName, undefined, [pk(input.Item)]);
      break;
    case 'Query':
      add(op, input.TableName, input.IndexName, [queryPartition(input)]);
      break;
    case 'Scan':
      add(op, input.TableName, input.IndexName, []);
      break;
    case 'BatchGetItem':
      for (const [name, req] of Object.entries(input.RequestItems ?? {}) as [string, Input][])
        add(op, name, undefined, (req.Keys ?? []).map(pk));
      break;
    case 'BatchWriteItem':
      for (const [name, reqs] of Object.entries(input.RequestItems ?? {}) as [string, Input[]][])
        add(
          op,
          name,
          undefined,
          reqs.map((r) => pk(r.PutRequest?.Item ?? r.DeleteRequest?.Key)),
        );
      break;
    case 'TransactWriteItems':
    case 'TransactGetItems':
      for (const item of (input.TransactItems ?? []) as Input[]) {
        const [kind, req] = Object.entries(item)[0] as [string, Input];
        const action = TRANSACT_ACTIONS[kind] ?? kind;
        add(action, req.TableName, undefined, [pk(req.Item ?? req.Key)]);
      }
      break;
    case 'ExecuteStatement':
      addStatement(add, input as Statement);
      break;
    case 'BatchExecuteStatement':
    case 'ExecuteTransaction':
      for (const s of (input.Statements ?? input.TransactStatements ?? []) as Statement[])
        addStatement(add, s);
      break;
    default:
      add(op, input.TableName ?? '', undefined, []);
  }
  // Actions without a partition key (Scan) carry no keys.
  return [...out.values()].map((d) => (d.keys?.length ? d : { action: d.action, resource: d.resource }));
}

const BATCHES = new Set(['BatchGetItem', 'BatchWriteItem']);

const TRANSACT_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
};

interface Statement {
  Statement: string;
  Parameters?: unknown[];
}

/**
 * A PartiQL statement's action, table and partition key: `INSERT INTO "t" VALUE {'pk': ?, ...}` (the
 * form the service writes), `SELECT|UPDATE|DELETE ... "t" ... WHERE pk = ?|'...'`. A key it cannot
 * find is recorded as `?`, which no key condition allows.
 */
function addStatement(
  add: (action: string, table: string, index: string | undefined, pks: unknown[]) => void,
  s: Statement,
): void {
  const text = s.Statement.trim();
  const verb = text.split(/\s+/)[0].toUpperCase();
  const action = `PartiQL${verb[0]}${verb.slice(1).toLowerCase()}`;
  const target = /(?:INTO|FROM|UPDATE)\s+"([^"]+)"(?:\."([^"]+)")?/i.exec(text);
  const params = s.Parameters ?? [];
  const placeholdersBefore = (at: number) => (text.slice(0, at).match(/\?/g) ?? []).length;
  let pkValue: unknown = '?';
  const pkName = tableDef.partitionKey;
  const inValue = new RegExp(`'${pkName}'\\s*:\\s*(\\?|'([^']*)')`).exec(text);
  const inWhere = new RegExp(`\\bWHERE\\b[\\s\\S]*?"?\\b${pkName}\\b"?\\s*=\\s*(\\?|'([^']*)')`, 'i').exec(
    text,
  );
  const found = verb === 'INSERT' ? inValue : inWhere;
  if (found) {
    pkValue =
      found[1] === '?' ? attr(params[placeholdersBefore(found.index + found[0].length - 1)]) : found[2];
  }
  add(action, target?.[1] ?? '', target?.[2], [pkValue]);
}

/** The partition key value a Query names (`<pk attribute> = :value` in its key condition). */
function queryPartition(input: Input): unknown {
  const gsi = tableDef.globalSecondaryIndexes.find((g) => g.indexName === input.IndexName);
  const attribute = gsi ? gsi.partitionKey : tableDef.partitionKey;
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  for (const m of String(input.KeyConditionExpression ?? '').matchAll(/(#?[\w]+)\s*=\s*(:[\w]+)/g)) {
    const name = m[1].startsWith('#') ? names[m[1]] : m[1];
    if (name === attribute) return attr(input.ExpressionAttributeValues?.[m[2]]);
  }
  return undefined;
}

/** A plain value, or the string of a marshalled attribute value (`{S: 'x'}`). */
function attr(v: unknown): unknown {
  if (v && typeof v === 'object' && 'S' in v) return (v as { S: unknown }).S;
  return v;
}

function tableResource(name: string): string {
  return name === process.env.TABLE_NAME ? 'table' : String(name);
}

function queueName(url: unknown): string {
  for (const q of ['ALARM', 'WEBHOOK', 'NOTIFY', 'REPLAY']) {
    if (url === process.env[`${q}_QUEUE_URL`]) return `queue/${q.toLowerCase()}`;
    if (url === process.env[`${q}_DLQ_URL`]) return `dlq/${q.toLowerCase()}`;
  }
  return String(url);
}

function secretName(id: unknown): string {
  if (id === process.env.SEAL_KEY_SECRET_ARN) return 'secret/seal-key';
  if (id === process.env.NOTIFY_SECRETS_ARN) return 'secret/notify-providers';
  if (id === process.env.OIDC_CLIENT_SECRET_ARN) return 'secret/sso-client';
  return String(id);
}
