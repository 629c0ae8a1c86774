import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { parseJson } from '../../json.ts';
import {
  db,
  fromItem,
  getItems,
  insertItems,
  isConditionFailure,
  queryAll,
  SCHEMA_VERSION,
  tableName,
} from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { type DueItem, dueRecord } from '../due/repository.ts';
import type { AlarmRecord, MetricState } from './model.ts';

/**
 * The alarm pipeline's DynamoDB access (KEY-DESIGN.md, AP-P1..AP-P7). One function per access
 * pattern; no scans.
 */

function strip<T>(item: Record<string, unknown> | undefined): T | undefined {
  return item ? fromItem<T>(item, 'ttl') : undefined;
}

/**
 * An alarm record is stored as JSON text (`alarm_json`) beside its keys: the content keeps its exact
 * digits, any key and any depth the report endpoint accepts (API guide §7.3), which a map attribute
 * could not, and the item is a handful of attributes rather than dozens of nested values (DynamoDB
 * Local spent about a fifth of its CPU per record walking them, bench:ingest). Records of schema 2
 * (every field an attribute, the content as JSON text in `history.ctn`) are still read.
 */
const ALARM_SCHEMA_VERSION = 3;

/** The record an item holds, with the content as an object (exact digits kept). */
export function alarmRecordOf(item: Record<string, unknown> | undefined): AlarmRecord | undefined {
  if (!item) return undefined;
  if (typeof item.alarm_json === 'string') {
    const r = parseJson(item.alarm_json) as AlarmRecord;
    return typeof item.ttl === 'number' ? { ...r, expires_at: item.ttl } : r;
  }
  const r = strip<AlarmRecord>(item) as AlarmRecord;
  if (typeof item.ttl === 'number') r.expires_at = item.ttl;
  const ctn = r.history.ctn as unknown;
  if (typeof ctn !== 'string') return r;
  return { ...r, history: { ...r.history, ctn: parseJson(ctn) as Record<string, unknown> } };
}

/** AP-P1: the record of a task's alarm by uuid (strongly consistent: a redelivery must see the first write). */
export async function getAlarmRecord(taskId: number, uuid: string): Promise<AlarmRecord | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.alarm(taskId, uuid), ConsistentRead: true }),
  );
  return alarmRecordOf(out.Item);
}

/**
 * AP-P1 (batch): the records of several alarms in one BatchGetItem (consistent), in the order asked
 * (undefined where none): the delayed work of a due queue batch reads them together.
 */
export async function getAlarmRecords(
  refs: { taskId: number; uuid: string }[],
): Promise<(AlarmRecord | undefined)[]> {
  const unique = new Map(refs.map((r) => [keys.alarm(r.taskId, r.uuid).pk, keys.alarm(r.taskId, r.uuid)]));
  const items = await getItems([...unique.values()], { consistent: true, what: 'alarm records' });
  const byKey = new Map(items.map((i) => [`${i.pk}`, alarmRecordOf(i)]));
  return refs.map((r) => byKey.get(keys.alarm(r.taskId, r.uuid).pk));
}

function alarmItem(record: AlarmRecord): Record<string, unknown> {
  const { expires_at, ...rest } = record;
  return {
    ...keys.alarm(record.task_id, record.uuid),
    entity: 'alarm',
    schema_version: ALARM_SCHEMA_VERSION,
    task_id: record.task_id,
    uuid: record.uuid,
    alarm_json: JSON.stringify(rest),
    ...(expires_at ? { ttl: expires_at } : {}),
  };
}

/**
 * AP-P2: store the alarm records of a batch, each once: a PartiQL INSERT each, 25 to a
 * BatchExecuteStatement, tells which were already recorded (a redelivered message) without reading
 * them first. Two consumers recording the same alarm at the same moment (SQS delivering one message
 * twice at once): one stores it, the other is told it exists.
 */
export async function putAlarmRecords(records: AlarmRecord[]): Promise<('created' | 'exists')[]> {
  if (records.length === 0) return [];
  const inserted = await insertItems(records.map(alarmItem), 'alarm records');
  return inserted.map((created) => (created ? 'created' : 'exists'));
}

/** AP-P3: the state of a metric (strongly consistent: it is the basis of a conditional commit). */
export async function getMetricState(taskId: number, metric: string): Promise<MetricState | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.metricState(taskId, metric), ConsistentRead: true }),
  );
  return strip<MetricState>(out.Item);
}

/** AP-P4: the minute buckets of a metric in [fromMinute, toMinute] (one Query on its collection). */
export async function queryMetricMinutes(
  taskId: number,
  metric: string,
  fromMinute: number,
  toMinute: number,
): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: {
      ':pk': keys.metricCollection(taskId, metric),
      ':from': keys.metricMinuteSk(fromMinute),
      ':to': keys.metricMinuteSk(toMinute),
    },
    ProjectionExpression: '#m, #n',
    ExpressionAttributeNames: { '#m': 'minute', '#n': 'n' },
    ConsistentRead: true,
  });
  for (const i of items) out.set(Number(i.minute), Number(i.n));
  return out;
}

export interface MetricCommit {
  state: MetricState;
  /** The version the state was read at; undefined when it did not exist. */
  expectedVersion?: number;
  stateTtl: number;
  /** Alarms to add to a minute bucket. */
  bucket?: { minute: number; add: number; ttl: number };
  records: AlarmRecord[];
  dues: DueItem[];
}

export type CommitResult = { ok: true } | { ok: false; duplicates: string[]; conflict: boolean };

/**
 * AP-P5: commit a group of alarms of one metric atomically: the metric state (conditioned on the
 * version it was read at), its minute bucket, the alarm records (each conditioned on not existing)
 * and the due work they schedule. On failure, `duplicates` lists alarms already recorded and
 * `conflict` says the state moved (or DynamoDB reported a conflict): re-read and retry.
 */
export async function commitMetricGroup(c: MetricCommit): Promise<CommitResult> {
  const table = tableName();
  const stateItem = {
    ...keys.metricState(c.state.task_id, c.state.metric),
    entity: 'metric_state',
    schema_version: SCHEMA_VERSION,
    ...c.state,
    ttl: c.stateTtl,
  };
  const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
    {
      Put: {
        TableName: table,
        Item: stateItem,
        ...(c.expectedVersion === undefined
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : {
              ConditionExpression: '#version = :v',
              ExpressionAttributeNames: { '#version': 'version' },
              ExpressionAttributeValues: { ':v': c.expectedVersion },
            }),
      },
    },
  ];
  if (c.bucket && c.bucket.add > 0) {
    items.push({
      Update: {
        TableName: table,
        Key: keys.metricMinute(c.state.task_id, c.state.metric, c.bucket.minute),
        UpdateExpression: 'ADD #n :add SET #m = :m, entity = :e, schema_version = :sv, #ttl = :ttl',
        ExpressionAttributeNames: { '#n': 'n', '#m': 'minute', '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':add': c.bucket.add,
          ':m': c.bucket.minute,
          ':e': 'metric_minute',
          ':sv': SCHEMA_VERSION,
          ':ttl': c.bucket.ttl,
        },
      },
    });
  }
  const firstRecord = items.length;
  for (const r of c.records) {
    items.push({
      Put: { TableName: table, Item: alarmItem(r), ConditionExpression: 'attribute_not_exists(pk)' },
    });
  }
  for (const d of c.dues) items.push({ Put: { TableName: table, Item: dueRecord(d) } });
  try {
    await db().send(new TransactWriteCommand({ TransactItems: items }));
    return { ok: true };
  } catch (err) {
    const e = err as { name?: string; CancellationReasons?: { Code?: string }[] };
    if (e.name !== 'TransactionCanceledException' && e.name !== 'TransactionConflictException') throw err;
    const reasons = e.CancellationReasons ?? [];
    const duplicates: string[] = [];
    reasons.forEach((r, i) => {
      if (r.Code === 'ConditionalCheckFailed' && i >= firstRecord && i < firstRecord + c.records.length) {
        duplicates.push(c.records[i - firstRecord].uuid);
      }
    });
    const conflict = duplicates.length === 0 || reasons[0]?.Code === 'ConditionalCheckFailed';
    return { ok: false, duplicates, conflict };
  }
}

/**
 * AP-P6: a delay-recovery check finished: clear the metric's pending flag, conditioned on the version
 * it was read at (false when an alarm came in between).
 */
export async function clearRecoveryPending(
  taskId: number,
  metric: string,
  version: number,
): Promise<boolean> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.metricState(taskId, metric),
        UpdateExpression: 'SET recovery_pending = :f, #version = :next',
        ConditionExpression: '#version = :v',
        ExpressionAttributeNames: { '#version': 'version' },
        ExpressionAttributeValues: { ':f': false, ':v': version, ':next': version + 1 },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * AP-P10: take a metric's serial lane until `untilMs` (contention.ts), unless someone else holds it;
 * `token` names the holder (its release is conditioned on it). False when held.
 */
export const takeMetricLane = (
  taskId: number,
  metric: string,
  token: string,
  nowMs: number,
  untilMs: number,
): Promise<boolean> =>
  putMetricLane(
    taskId,
    metric,
    token,
    untilMs,
    'attribute_not_exists(pk) OR until_ms < :now OR holder = :token',
    {
      ':now': nowMs,
      ':token': token,
    },
  );

/** AP-P10: give a metric's serial lane up (if `token` still holds it: a lapsed lease is someone else's). */
export async function releaseMetricLane(taskId: number, metric: string, token: string): Promise<void> {
  await putMetricLane(taskId, metric, token, 0, 'holder = :token', { ':token': token });
}

/** The lane item held by `token` until `untilMs` (0: free), written if `condition` holds; false if not. */
async function putMetricLane(
  taskId: number,
  metric: string,
  token: string,
  untilMs: number,
  condition: string,
  values: Record<string, unknown>,
): Promise<boolean> {
  try {
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.metricLane(taskId, metric),
          entity: 'metric_lane',
          schema_version: SCHEMA_VERSION,
          holder: token,
          until_ms: untilMs,
          ttl: Math.ceil(Math.max(untilMs, Date.now()) / 1000) + 3600,
        },
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** AP-P7: reserve a block of `size` history ids; returns the last id of the block. */
export async function reserveHistoryIds(size: number): Promise<number> {
  const out = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.counter('history'),
      UpdateExpression: 'ADD #seq :n SET entity = :entity, schema_version = :v',
      ExpressionAttributeNames: { '#seq': 'seq' },
      ExpressionAttributeValues: { ':n': size, ':entity': 'counter', ':v': SCHEMA_VERSION },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.seq);
}

/** How long a processed monitor alert of a task that stores nothing is remembered (its re-sends). */
const SEEN_TTL_SECONDS = 7 * 86_400;

/**
 * AP-P8: remember that an alarm of a task that stores nothing was processed (a monitor's alert, which
 * the monitor may send again): undefined the first time, else when it was first processed.
 */
export async function markAlarmSeen(taskId: number, uuid: string, now: number): Promise<number | undefined> {
  try {
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.alarmSeen(taskId, uuid),
          entity: 'alarm_seen',
          processed_at: now,
          ttl: now + SEEN_TTL_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return undefined;
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const out = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.alarmSeen(taskId, uuid), ConsistentRead: true }),
    );
    return (out.Item?.processed_at as number | undefined) ?? now;
  }
}
