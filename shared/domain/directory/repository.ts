import { GetCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  db,
  fromItem,
  getItems,
  isConditionFailure,
  putItems,
  queryAll,
  SCHEMA_VERSION,
  tableName,
} from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { sealReceiverRobots } from '../channels/robots.ts';
import type { AlarmGroup, BusinessUnit, Department, Tag, Template, User } from './model.ts';

type Key = { pk: string; sk: string };

function strip<T>(item: Record<string, unknown> | undefined): T | undefined {
  return item ? fromItem<T>(item) : undefined;
}

async function getOne<T>(key: Key): Promise<T | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: key }));
  return strip<T>(out.Item);
}

/** Items by id (BatchGetItem); result order follows `ids`, missing ones dropped. */
async function getMany<T>(ids: number[], key: (id: number) => Key, idOf: (t: T) => number): Promise<T[]> {
  const items = await getItems([...new Set(ids)].map(key), { what: 'directory read' });
  const found = new Map(
    items.map((item) => {
      const t = strip<T>(item) as T;
      return [idOf(t), t] as const;
    }),
  );
  return ids.flatMap((id) => (found.has(id) ? [found.get(id) as T] : []));
}

/** AP-D1: department by id. */
export const getDepartment = (id: number) => getOne<Department>(keys.department(id));
/** Departments by id (batch). */
export const getDepartments = (ids: number[]) => getMany<Department>(ids, keys.department, (d) => d.id);
/** AP-D2: all departments, ordered by id (one item collection of gsi1). */
export async function listDepartments(): Promise<Department[]> {
  const items = await queryAll({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.departmentsIndex().gsi1pk },
  });
  return items.map((i) => fromItem<Department>(i));
}
/** AP-D3: business unit by id. */
export const getBusinessUnit = (id: number) => getOne<BusinessUnit>(keys.businessUnit(id));
/** AP-D4: user by uid. */
export const getUser = (uid: number) => getOne<User>(keys.user(uid));
/** AP-D5: users by uids (batch). */
export const getUsers = (uids: number[]) => getMany<User>(uids, keys.user, (u) => u.uid);
/** AP-D6: alarm groups by ids (batch). */
export const getAlarmGroups = (ids: number[]) => getMany<AlarmGroup>(ids, keys.alarmGroup, (g) => g.id);
/** AP-D7: tags by ids (batch). */
export const getTags = (ids: number[]) => getMany<Tag>(ids, keys.tag, (t) => t.id);
/** AP-D8: template by id. */
export const getTemplate = (id: number) => getOne<Template>(keys.template(id));

/**
 * AP-D11: the users a sign-in name stands for: an e-mail address (it holds `@`) on gsi2, else an
 * account name on gsi1, both lower-cased. At most two are read: more than one is ambiguous (the
 * directory should not give two people one account name or address).
 */
export async function findUsersBySignInName(name: string): Promise<User[]> {
  const email = name.includes('@');
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: email ? 'gsi2' : 'gsi1',
      KeyConditionExpression: email ? 'gsi2pk = :pk' : 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': email ? keys.userByEmail(name) : keys.userByAccount(name) },
      Limit: 2,
    }),
  );
  return (out.Items ?? []).map((i) => fromItem<User>(i));
}

/**
 * AP-D12 (maintenance, not a request path): users stored before the sign-in index existed, one Scan
 * page at a time (`entity = user AND attribute_not_exists(gsi1pk) AND attribute_not_exists(gsi2pk)`).
 */
export async function scanUsersWithoutSignInKeys(
  start?: Record<string, unknown>,
): Promise<{ users: User[]; next?: Record<string, unknown> }> {
  const out = await db().send(
    new ScanCommand({
      TableName: tableName(),
      FilterExpression: 'entity = :e AND attribute_not_exists(gsi1pk) AND attribute_not_exists(gsi2pk)',
      ExpressionAttributeValues: { ':e': 'user' },
      ExclusiveStartKey: start,
    }),
  );
  return { users: (out.Items ?? []).map((i) => fromItem<User>(i)), next: out.LastEvaluatedKey };
}

/** AP-D12: give a user its sign-in index entries (the item is otherwise unchanged). */
export async function setUserSignInKeys(u: User): Promise<void> {
  const k = keys.userSignInKeys(u);
  const names = Object.keys(k);
  if (names.length === 0) return;
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.user(u.uid),
        UpdateExpression: `SET ${names.map((n) => `${n} = :${n}`).join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: Object.fromEntries(Object.entries(k).map(([n, v]) => [`:${n}`, v])),
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** AP-D9: set a user's phone; undefined when the user does not exist. */
export async function updateUserPhone(uid: number, phone: string, now: number): Promise<User | undefined> {
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.user(uid),
        UpdateExpression: 'SET phone = :phone, updated_at = :now',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':phone': phone, ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<User>(out.Attributes);
  } catch (err) {
    if (isConditionFailure(err)) return undefined;
    throw err;
  }
}

export type DirectoryItem =
  | { entity: 'business_unit'; value: BusinessUnit }
  | { entity: 'department'; value: Department }
  | { entity: 'user'; value: User }
  | { entity: 'alarm_group'; value: AlarmGroup }
  | { entity: 'tag'; value: Tag }
  | { entity: 'template'; value: Template };

function toItem(d: DirectoryItem): Record<string, unknown> {
  const base = { entity: d.entity, schema_version: SCHEMA_VERSION };
  switch (d.entity) {
    case 'business_unit':
      return { ...keys.businessUnit(d.value.id), ...base, ...d.value };
    case 'department':
      return { ...keys.department(d.value.id), ...keys.departmentListing(d.value.id), ...base, ...d.value };
    case 'user':
      return { ...keys.user(d.value.uid), ...keys.userSignInKeys(d.value), ...base, ...d.value };
    case 'alarm_group':
      // Robot webhooks and secrets are stored sealed (channels/robots.ts); reads keep them sealed.
      return {
        ...keys.alarmGroup(d.value.id),
        ...base,
        ...d.value,
        receiver: sealReceiverRobots(d.value.receiver),
      };
    case 'tag':
      return { ...keys.tag(d.value.id), ...base, ...d.value };
    case 'template':
      return { ...keys.template(d.value.id), ...base, ...d.value };
  }
}

/** AP-D10: upsert directory entries (admin import), 25 per batch, unprocessed items retried. */
export async function putDirectoryItems(items: DirectoryItem[]): Promise<void> {
  await putItems(items.map(toItem), 'directory import');
}
