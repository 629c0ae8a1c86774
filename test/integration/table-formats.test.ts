import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { db, insertItems, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { queryAlarmLog } from '../../shared/domain/alarms/log.ts';
import type { AlarmRecord } from '../../shared/domain/alarms/model.ts';
import { getAlarmRecord, putAlarmRecords } from '../../shared/domain/alarms/repository.ts';
import { parseJson } from '../../shared/json.ts';
import { listAttemptsOfEvent } from '../../shared/domain/webhooks/repository.ts';
import { startDynamo } from '../../shared/local/dynamo.ts';

/**
 * How items are written and read on DynamoDB Local: the alarm records' PartiQL INSERTs (one per item,
 * 25 to a call, an existing key reported and left as it is), and log items stored before their rows
 * were compressed, which the readers still read.
 */

const unique = () => randomBytes(6).toString('hex');
const get = async (pk: string, sk: string) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: { pk, sk }, ConsistentRead: true }))).Item;

describe('insertItems', () => {
  it('inserts new keys, reports existing ones and leaves them as they were', async () => {
    // Arrange
    const pk = `TEST#${unique()}`;
    await db().send(new PutCommand({ TableName: tableName(), Item: { pk, sk: 'b', v: 'old' } }));
    // Act
    const out = await insertItems([
      { pk, sk: 'a', v: 'new', nested: { list: [1, 'x'], flag: true }, gone: undefined },
      { pk, sk: 'b', v: 'new' },
      { pk, sk: 'c', v: 'new' },
    ]);
    // Assert
    expect(out).toEqual([true, false, true]);
    expect(await get(pk, 'a')).toEqual({ pk, sk: 'a', v: 'new', nested: { list: [1, 'x'], flag: true } });
    expect((await get(pk, 'b'))?.v).toBe('old');
    expect((await get(pk, 'c'))?.v).toBe('new');
  });

  it('takes more than one call’s 25 statements, in order', async () => {
    const pk = `TEST#${unique()}`;
    const items = Array.from({ length: 30 }, (_, i) => ({ pk, sk: String(i).padStart(2, '0'), i }));
    expect(await insertItems(items)).toEqual(items.map(() => true));
    const again = await insertItems([...items.slice(0, 27), { pk, sk: 'new', i: 99 }]);
    expect(again).toEqual([...items.slice(0, 27).map(() => false), true]);
  });

  it('refuses an attribute name it cannot put in a statement, before writing anything', async () => {
    const pk = `TEST#${unique()}`;
    await expect(insertItems([{ pk, sk: 'a', "x'y": 1 }])).rejects.toThrow(/not insertable/);
    expect(await get(pk, 'a')).toBeUndefined();
  });
});

describe('log items written before their rows were compressed', () => {
  it('are still read by the alarm log', async () => {
    // Arrange: an ALOG item as written before (`log`: the rows as JSON text).
    const taskId = 900_000_000 + Math.floor(Math.random() * 1e6);
    const at = Date.now();
    const sec = Math.floor(at / 1000);
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.alarmLog(taskId, at, unique()),
          entity: 'alarm_log',
          schema_version: 1,
          task_id: taskId,
          log: JSON.stringify([['u-1', 7, sec, 2, 1, 'compress_disable', 'now', null, null, null, 0, null]]),
          ttl: sec + 3600,
        },
      }),
    );
    // Act
    const page = await queryAlarmLog(taskId, { from: sec - 60, to: sec + 60 }, {}, 10);
    // Assert
    expect(page.entries).toEqual([
      expect.objectContaining({ uuid: 'u-1', history_id: 7, level: 2, reported_level: 1, stored: true }),
    ]);
  });

  it('are still read by the delivery log', async () => {
    const taskId = 900_000_000 + Math.floor(Math.random() * 1e6);
    const base = Date.now();
    const eventId = `${taskId}:u-2:ALARM`;
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.webhookLog(taskId, base, unique()),
          entity: 'webhook_log',
          schema_version: 1,
          task_id: taskId,
          target: 'http://127.0.0.1:9',
          base_ms: base,
          log: JSON.stringify([[eventId, 1, 'd', 'ALARM', 'compress_disable', 200, null, 4, 5]]),
          ttl: Math.floor(base / 1000) + 3600,
        },
      }),
    );
    const attempts = await listAttemptsOfEvent(eventId, { taskId, fromMs: base - 1000, toMs: base + 1000 });
    expect(attempts).toEqual([
      expect.objectContaining({
        event_id: eventId,
        attempt: 1,
        outcome: 'delivered',
        status: 200,
        at_ms: base + 5,
      }),
    ]);
  });
});

describe('DynamoDB Local as the stack starts it', () => {
  it('parses its table description once, not on every item (its launcher says so)', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const dynamo = await startDynamo(port, null);
    try {
      expect(dynamo.memoizesTables).toBe(true);
    } finally {
      await dynamo.stop();
    }
  });
});

describe('alarm records', () => {
  /** A record with its content as JSON text (compared by its exact text). */
  const comparable = (r: AlarmRecord) => ({
    ...r,
    history: { ...r.history, ctn: JSON.stringify(r.history.ctn) },
  });
  const record = (taskId: number, uuid: string): AlarmRecord => ({
    uuid,
    task_id: taskId,
    outcome: 'compress_disable',
    history: {
      id: 41,
      uuid,
      task_id: taskId,
      batch: 0,
      metric: '',
      level: 2,
      ctn: parseJson('{"trace_id":12345678901234567890,"ratio":1e21,"__proto__":{"x":1}}') as Record<
        string,
        unknown
      >,
      notice_time: 1_700_000_000,
      created_at: 1_700_000_001,
    },
    reported_level: 2,
    reported_at: 1_700_000_000,
    processed_at: 1_700_000_001,
    selection: { users: [1], groups: [] } as unknown as AlarmRecord['selection'],
    notify: 'now',
    upgrades: [],
    workflow: false,
    why: { task_version: 3 },
    expires_at: 1_900_000_000,
  });

  it('are read back as written, the content with its exact digits and keys', async () => {
    const taskId = 900_000_000 + Math.floor(Math.random() * 1e6);
    const r = record(taskId, unique());
    expect(await putAlarmRecords([r])).toEqual(['created']);
    expect(await putAlarmRecords([r])).toEqual(['exists']);
    const back = (await getAlarmRecord(taskId, r.uuid)) as AlarmRecord;
    expect(comparable(back)).toEqual(comparable(r));
    expect(JSON.stringify(back.history.ctn)).toBe(
      '{"trace_id":12345678901234567890,"ratio":1e21,"__proto__":{"x":1}}',
    );
  });

  it('written before as one attribute per field (schema 2) are still read', async () => {
    const taskId = 900_000_000 + Math.floor(Math.random() * 1e6);
    const r = record(taskId, unique());
    const { expires_at, ...rest } = r;
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.alarm(taskId, r.uuid),
          entity: 'alarm',
          ...rest,
          schema_version: 2,
          history: { ...r.history, ctn: JSON.stringify(r.history.ctn) },
          ttl: expires_at,
        },
      }),
    );
    const back = (await getAlarmRecord(taskId, r.uuid)) as AlarmRecord;
    expect(comparable(back)).toEqual(comparable(r));
  });
});
