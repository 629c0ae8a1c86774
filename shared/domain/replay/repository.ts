import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { db, getItems, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { alarmRecordOf } from '../alarms/repository.ts';

/**
 * The storage of what-if replays (KEY-DESIGN.md, AP-Y1..AP-Y3): the records of a window's alarms,
 * read by key, and a replay's result item `REPLAY#<id>`, the only item a replay writes. The result
 * (and the request of a replay waiting for its queue) is kept as raw-DEFLATE compressed JSON; the item
 * expires REPLAY_TTL_DAYS after it was written.
 */
export const REPLAY_TTL_DAYS = 7;

export type ReplayStatus = 'running' | 'done' | 'failed';

export interface ReplayItem {
  replay_id: string;
  task_id: number;
  /** The acting user who asked. */
  uid: number;
  status: ReplayStatus;
  created_at: number;
  finished_at?: number;
  /** The task's version when the replay read it (a save with its id must find the same). */
  task_version?: number;
  /** The configuration replayed (tasks/normalize.ts configFingerprint). */
  config_fingerprint?: string;
  /** The request, while the replay waits for its queue. */
  request?: unknown;
  /** The answer, once done. */
  result?: unknown;
  /** Why it failed. */
  error?: { code: number; msg: string };
}

const pack = (v: unknown) => deflateRawSync(JSON.stringify(v));
const unpack = (z: unknown) =>
  z instanceof Uint8Array ? JSON.parse(inflateRawSync(z).toString('utf8')) : undefined;

/** AP-Y1: the stored records of a task's alarms (BatchGetItem, consistent); expired ones are absent. */
export async function getAlarmRecords(taskId: number, uuids: string[]): Promise<AlarmRecord[]> {
  const items = await getItems(
    uuids.map((u) => keys.alarm(taskId, u)),
    { consistent: true, what: 'alarm records' },
  );
  return items.map((i) => alarmRecordOf(i) as AlarmRecord);
}

/** AP-Y2: write a replay's item (its request while running, its result when done or why it failed). */
export async function putReplay(item: ReplayItem): Promise<void> {
  const { request, result, ...rest } = item;
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.replay(item.replay_id),
        entity: 'replay',
        schema_version: SCHEMA_VERSION,
        ...rest,
        ...(request !== undefined ? { requestz: pack(request) } : {}),
        ...(result !== undefined ? { resultz: pack(result) } : {}),
        ttl: item.created_at + REPLAY_TTL_DAYS * 86_400,
      },
    }),
  );
}

/** AP-Y3: a replay's item by id (consistent: a replay just finished is read back at once). */
export async function getReplay(id: string): Promise<ReplayItem | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.replay(id), ConsistentRead: true }),
  );
  const i = out.Item;
  if (!i) return undefined;
  return {
    replay_id: i.replay_id as string,
    task_id: i.task_id as number,
    uid: i.uid as number,
    status: i.status as ReplayStatus,
    created_at: i.created_at as number,
    ...(i.finished_at !== undefined ? { finished_at: i.finished_at as number } : {}),
    ...(i.task_version !== undefined ? { task_version: i.task_version as number } : {}),
    ...(i.config_fingerprint !== undefined ? { config_fingerprint: i.config_fingerprint as string } : {}),
    ...(i.requestz !== undefined ? { request: unpack(i.requestz) } : {}),
    ...(i.resultz !== undefined ? { result: unpack(i.resultz) } : {}),
    ...(i.error !== undefined ? { error: i.error as { code: number; msg: string } } : {}),
  };
}
