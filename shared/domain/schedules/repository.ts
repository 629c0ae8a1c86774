import {
  DeleteCommand,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  db,
  deleteItems,
  fromItem,
  getItems,
  isConditionFailure,
  queryAll,
  SCHEMA_VERSION,
  tableName,
  type TransactItem,
  transactionConditionFailed,
} from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import type { Override, Schedule, ScheduleVersion } from './model.ts';

/**
 * The only DynamoDB code of the schedules module (KEY-DESIGN.md, AP-O1 ... AP-O14). A schedule is one
 * item collection `SCHEDULE#<id>`: the schedule item, its configuration versions (by the instant
 * they take effect), its overrides (by their end), the tasks naming it and its raised coverage gaps.
 */

const head = (s: Schedule) => ({
  ...keys.schedule(s.id),
  ...keys.scheduleListing(s),
  entity: 'schedule',
  schema_version: SCHEMA_VERSION,
  ...s,
});

const versionItem = (id: number, v: ScheduleVersion) => ({
  ...keys.scheduleVersion(id, v.effective_from, v.version),
  entity: 'schedule_version',
  schema_version: SCHEMA_VERSION,
  schedule_id: id,
  ...v,
});

const overrideItem = (scheduleId: number, o: Override) => ({
  ...keys.scheduleOverride(scheduleId, o.end, o.id),
  entity: 'schedule_override',
  schema_version: SCHEMA_VERSION,
  schedule_id: scheduleId,
  ...o,
});

const fromHead = (item: Record<string, unknown>): Schedule => {
  const s = fromItem<Schedule & { override_seq?: number }>(item, 'override_seq');
  return { ...s, ref_count: s.ref_count ?? 0 };
};

/** AP-O1: a new schedule id (atomic counter). */
export async function allocateScheduleId(): Promise<number> {
  const out = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.counter('schedule'),
      UpdateExpression: 'SET #v = if_not_exists(#v, :zero) + :one, entity = :e, schema_version = :sv',
      ExpressionAttributeNames: { '#v': 'value' },
      ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':e': 'counter', ':sv': SCHEMA_VERSION },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.value);
}

/** AP-O1: the schedule item and its first configuration, in one transaction. */
export async function createScheduleItems(s: Schedule, first: ScheduleVersion): Promise<void> {
  await db().send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: tableName(), Item: head(s), ConditionExpression: 'attribute_not_exists(pk)' } },
        { Put: { TableName: tableName(), Item: versionItem(s.id, first) } },
      ],
    }),
  );
}

/** AP-O2: a schedule item. */
export async function getSchedule(id: number, consistent = false): Promise<Schedule | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.schedule(id), ConsistentRead: consistent }),
  );
  return out.Item ? fromHead(out.Item) : undefined;
}

/** AP-O3: schedule items by id (those that exist), in batches. */
export async function getSchedules(ids: number[]): Promise<Schedule[]> {
  if (ids.length === 0) return [];
  const items = await getItems(
    ids.map((id) => keys.schedule(id)),
    { what: 'schedules' },
  );
  return items.map(fromHead);
}

/**
 * AP-O4: the configuration versions that answer for instants from `from` on: the one in force at
 * `from` and every later one (a Query of the versions, newest first, that stops at the first one in
 * force at `from`). Without `from`, all of them.
 */
export async function getVersionsFrom(id: number, from?: number): Promise<ScheduleVersion[]> {
  const out: ScheduleVersion[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :v)',
        ExpressionAttributeValues: { ':pk': keys.schedulePartition(id), ':v': keys.scheduleVersionPrefix() },
        ScanIndexForward: false,
        ConsistentRead: true,
        Limit: 20,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const v = fromItem<ScheduleVersion>(item, 'schedule_id');
      out.push(v);
      if (from !== undefined && v.effective_from <= from) return out.reverse();
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return out.reverse();
}

/** AP-O5: the overrides that end after `after` (all of them without it), by their end. */
export async function getOverridesEndingAfter(id: number, after?: number): Promise<Override[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
    ExpressionAttributeValues: {
      ':pk': keys.schedulePartition(id),
      ':a': keys.scheduleOverrideAfter(after ?? -1),
      ':b': keys.scheduleOverrideLast(),
    },
    ConsistentRead: true,
  });
  return items.map((i) => fromItem<Override>(i, 'schedule_id'));
}

/**
 * AP-O6: an edit: the schedule item's own fields (under its version: an update, so the reference
 * count kept by task writes is left alone), the new configuration, and the removal of configurations
 * it supersedes (pending ones that would have taken effect at or after it). False on a lost race.
 */
export async function saveEdit(
  prev: Schedule,
  next: Schedule,
  version: ScheduleVersion,
  superseded: ScheduleVersion[],
): Promise<boolean> {
  const items: TransactItem[] = [
    {
      Update: {
        TableName: tableName(),
        Key: keys.schedule(prev.id),
        UpdateExpression:
          'SET #n = :n, department_id = :d, #p = :p, updated_at = :u, version = :v, gsi1pk = :gpk, gsi1sk = :gsk',
        ConditionExpression: 'version = :prev',
        ExpressionAttributeNames: { '#n': 'name', '#p': 'permission' },
        ExpressionAttributeValues: {
          ':n': next.name,
          ':d': next.department_id,
          ':p': next.permission,
          ':u': next.updated_at,
          ':v': next.version,
          ':prev': prev.version,
          ':gpk': keys.scheduleListing(next).gsi1pk,
          ':gsk': keys.scheduleListing(next).gsi1sk,
        },
      },
    },
    { Put: { TableName: tableName(), Item: versionItem(prev.id, version) } },
    ...superseded.map((v) => ({
      Delete: { TableName: tableName(), Key: keys.scheduleVersion(prev.id, v.effective_from, v.version) },
    })),
  ];
  try {
    await db().send(new TransactWriteCommand({ TransactItems: items }));
    return true;
  } catch (err) {
    if (transactionConditionFailed(err).length > 0) return false;
    throw err;
  }
}

/** AP-O7: the schedule listing (gsi1 `SCHEDULES`, by name), one page. */
export async function listSchedulesPage(
  limit: number,
  after?: Record<string, unknown>,
): Promise<{ schedules: Schedule[]; next?: Record<string, unknown> }> {
  const page = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.scheduleListingPartition() },
      Limit: limit,
      ExclusiveStartKey: after,
    }),
  );
  return { schedules: (page.Items ?? []).map(fromHead), next: page.LastEvaluatedKey };
}

/** AP-O8: the next override id of a schedule (its item's counter); undefined when it does not exist. */
export async function nextOverrideId(id: number): Promise<number | undefined> {
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.schedule(id),
        UpdateExpression: 'ADD override_seq :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.override_seq);
  } catch (err) {
    if (isConditionFailure(err)) return undefined;
    throw err;
  }
}

/** AP-O8: an override stored. */
export async function putOverride(scheduleId: number, o: Override): Promise<void> {
  await db().send(
    new TransactWriteCommand({
      TransactItems: [
        // The schedule must still exist (a delete removes its overrides).
        {
          ConditionCheck: {
            TableName: tableName(),
            Key: keys.schedule(scheduleId),
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
        { Put: { TableName: tableName(), Item: overrideItem(scheduleId, o) } },
      ],
    }),
  );
}

/** AP-O9: an override removed, or cut to end at `endNow` (its key holds its end: the item moves). */
export async function endOverride(scheduleId: number, o: Override, endNow?: number): Promise<void> {
  const items: TransactItem[] = [
    { Delete: { TableName: tableName(), Key: keys.scheduleOverride(scheduleId, o.end, o.id) } },
  ];
  if (endNow !== undefined) {
    items.push({ Put: { TableName: tableName(), Item: overrideItem(scheduleId, { ...o, end: endNow }) } });
  }
  await db().send(new TransactWriteCommand({ TransactItems: items }));
}

/** AP-O10: up to `limit` tasks whose receivers name a schedule (its reference index). */
export async function taskRefsOf(id: number, limit: number): Promise<number[]> {
  const page = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :r)',
      ExpressionAttributeValues: { ':pk': keys.schedulePartition(id), ':r': keys.scheduleTaskRefPrefix() },
      Limit: limit,
      ConsistentRead: true,
    }),
  );
  return (page.Items ?? []).map((i) => i.task_id as number);
}

/**
 * AP-O10: the writes of a task transaction (tasks/repository-writes.ts) that keep the reference index:
 * for each schedule newly named a reference item and +1 on the schedule's count, for each no longer
 * named its removal and -1. The count's update requires the schedule to exist, so a task cannot name
 * a deleted one, and a delete (AP-O11) cannot miss a task naming it.
 */
export function referenceWrites(taskId: number, before: number[], after: number[]): TransactItem[] {
  const added = after.filter((s) => !before.includes(s));
  const removed = before.filter((s) => !after.includes(s));
  const count = (id: number, delta: number): TransactItem => ({
    Update: {
      TableName: tableName(),
      Key: keys.schedule(id),
      UpdateExpression: 'ADD ref_count :d',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':d': delta },
    },
  });
  return [
    ...added.flatMap((id): TransactItem[] => [
      count(id, 1),
      {
        Put: {
          TableName: tableName(),
          Item: {
            ...keys.scheduleTaskRef(id, taskId),
            entity: 'schedule_task_ref',
            schema_version: SCHEMA_VERSION,
            schedule_id: id,
            task_id: taskId,
          },
        },
      },
    ]),
    ...removed.flatMap((id): TransactItem[] => [
      count(id, -1),
      { Delete: { TableName: tableName(), Key: keys.scheduleTaskRef(id, taskId) } },
    ]),
  ];
}

/**
 * AP-O11: delete a schedule: its item, under its version and only while no task names it (false
 * otherwise), then everything else in its collection.
 */
export async function deleteScheduleItems(s: Schedule): Promise<boolean> {
  try {
    await db().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.schedule(s.id),
        ConditionExpression: 'version = :v AND (attribute_not_exists(ref_count) OR ref_count = :zero)',
        ExpressionAttributeValues: { ':v': s.version, ':zero': 0 },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
  // Gone first: from now on no task write can add a reference (their count update needs it).
  const rest = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.schedulePartition(s.id) },
    ProjectionExpression: 'pk, sk',
  });
  // The raised gaps stay: the coverage check that follows sends their recoveries (AP-O13).
  const gaps = keys.scheduleGaps(s.id).sk;
  await deleteItems(
    rest.filter((i) => i.sk !== gaps).map((i) => ({ pk: i.pk as string, sk: i.sk as string })),
    'schedule items',
  );
  return true;
}

/** AP-O12: set (a SHA-256 hex) or, with undefined, remove the calendar feed key. */
export async function setIcalHash(id: number, hash: string | undefined): Promise<boolean> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.schedule(id),
        UpdateExpression: hash ? 'SET ical_hash = :h' : 'REMOVE ical_hash',
        ConditionExpression: 'attribute_exists(pk)',
        ...(hash ? { ExpressionAttributeValues: { ':h': hash } } : {}),
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** A coverage gap raised as an alarm (AP-O13). */
export interface RaisedGap {
  start: number;
  end: number;
  alarm_task_id: number;
  uuid: string;
  ctn: Record<string, unknown>;
}

/** AP-O13: the gaps raised and not yet recovered, with the state's version. */
export async function getRaisedGaps(id: number): Promise<{ gaps: RaisedGap[]; version: number }> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.scheduleGaps(id), ConsistentRead: true }),
  );
  return {
    gaps: (out.Item?.gaps as RaisedGap[] | undefined) ?? [],
    version: (out.Item?.version as number | undefined) ?? 0,
  };
}

/**
 * AP-O13: the raised gaps replaced, under the version read (false on a lost race). With none left
 * and the schedule gone (`expireAt`), the item expires then.
 */
export async function putRaisedGaps(
  id: number,
  gaps: RaisedGap[],
  version: number,
  expireAt?: number,
): Promise<boolean> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.scheduleGaps(id),
        UpdateExpression: `SET gaps = :g, version = :next, entity = :e, schema_version = :sv${
          expireAt === undefined ? '' : ', #ttl = :ttl'
        }`,
        ConditionExpression: 'attribute_not_exists(version) OR version = :v',
        ...(expireAt === undefined ? {} : { ExpressionAttributeNames: { '#ttl': 'ttl' } }),
        ExpressionAttributeValues: {
          ':g': gaps,
          ':next': version + 1,
          ':v': version,
          ':e': 'schedule_gaps',
          ':sv': SCHEMA_VERSION,
          ...(expireAt === undefined ? {} : { ':ttl': expireAt }),
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** AP-O14: whether a task exists (the coverage alarm's task, checked when a configuration is saved). */
export async function taskExists(taskId: number): Promise<boolean> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.task(taskId), ProjectionExpression: 'pk' }),
  );
  return out.Item !== undefined;
}
