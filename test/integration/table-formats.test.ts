import { randomBytes } from 'node:crypto';
import {
  BatchExecuteStatementCommand,
  ExecuteStatementCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { db, insertItems, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { type AlarmLogEntry, putBatchLogs, queryAlarmLog } from '../../shared/domain/alarms/log.ts';
import type { AlarmRecord } from '../../shared/domain/alarms/model.ts';
import { getAlarmRecord, putAlarmRecords } from '../../shared/domain/alarms/repository.ts';
import { parseJson } from '../../shared/json.ts';
import { listAttemptsOfEvent, listRecentAttemptsOfTask, putDeliveryLogs, type WebhookAttempt } from '../../shared/domain/webhooks/repository.ts';
import { pageDeliveryLogOfTask, type DeliveryLogPosition } from '../../shared/domain/webhooks/repository-listing.ts';

/**
 * How items are written and read on DynamoDB Local: the alarm records' PartiQL INSERTs (one per item,
 * 25 to a call, an existing key reported and left as it is), a batch's deliveries carried in its alarm
 * log items, and log items stored before their rows were compressed, which the readers still read.
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

describe('a batch\u2019s webhook first attempts carried in its alarm log items', () => {
  const entry = (taskId: number, uuid: string, expiresAt: number, createdAt: number): AlarmLogEntry => ({
    uuid,
    task_id: taskId,
    history_id: 1,
    created_at: createdAt,
    level: 1,
    reported_level: 1,
    decision: 'compress_disable',
    notify: 'now',
    upgrades: 0,
    stored: true,
    expires_at: expiresAt,
  });
  const attempt = (taskId: number, eventId: string, atMs: number): WebhookAttempt => ({
    event_id: eventId,
    task_id: taskId,
    attempt: 1,
    outcome: 'delivered',
    event: 'ALARM',
    type: 'compress_disable',
    target: 'http://127.0.0.1:9',
    status: 200,
    duration_ms: 2,
    at_ms: atMs,
    at: Math.floor(atMs / 1000),
  });

  it('cost one item per task, are read by every reader of the delivery log, in order and across pages', async () => {
    // Arrange: three batches of one task, 1 s apart: a delivery log item of its own (deliver-webhook),
    // an alarm log item carrying two first attempts, an alarm log item carrying none.
    const taskId = 900_000_000 + Math.floor(Math.random() * 1e6);
    // Noon (UTC) yesterday: all of it on one day.
    const t0 = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 43_200_000;
    const sec = Math.floor(t0 / 1000);
    const expires = sec + 90 * 86_400;
    await putDeliveryLogs([attempt(taskId, 'ping', t0)]);
    await putBatchLogs(
      [entry(taskId, 'u-1', expires, sec), entry(taskId, 'u-2', expires, sec)],
      [attempt(taskId, 'e-1', t0 + 900), attempt(taskId, 'e-2', t0 + 950)],
      t0 + 1000,
    );
    await putBatchLogs([entry(taskId, 'u-3', expires, sec + 2)], [], t0 + 2000);

    // Assert: what the table holds: no delivery log item for the carried attempts.
    const day = Math.floor(t0 / 86_400_000);
    const partition = async (pk: string) =>
      (
        await db().send(
          new QueryCommand({
            TableName: tableName(),
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': pk },
          }),
        )
      ).Items ?? [];
    expect(await partition(keys.webhookLogDay(taskId, day))).toHaveLength(1);
    const logs = await partition(keys.alarmLogDay(taskId, day));
    expect(logs.map((i) => i.deliveries !== undefined)).toEqual([true, false]);

    // Act + Assert: the trace's window read, the recent list, the pages (one attempt a page).
    expect(await listAttemptsOfEvent('e-2', { taskId, fromMs: t0, toMs: t0 + 5000 })).toEqual([
      expect.objectContaining({ event_id: 'e-2', attempt: 1, outcome: 'delivered', at_ms: t0 + 950 }),
    ]);
    const now = t0 + 10_000;
    expect((await listRecentAttemptsOfTask(taskId, 10, now)).map((a) => a.event_id)).toEqual([
      'e-2',
      'e-1',
      'ping',
    ]);
    const paged: string[] = [];
    let after: DeliveryLogPosition | undefined;
    for (let n = 0; n < 10; n++) {
      const page = await pageDeliveryLogOfTask(taskId, 1, now, after);
      paged.push(...page.rows.map((r) => r.attempt.event_id));
      if (page.done) break;
      after = page.rows.at(-1)?.after;
    }
    expect(paged).toEqual(['e-2', 'e-1', 'ping']);
    // The alarm log itself reads as before.
    const alarms = await queryAlarmLog(taskId, { from: sec - 60, to: sec + 60 }, {}, 10);
    expect(alarms.entries.map((e) => e.uuid).sort()).toEqual(['u-1', 'u-2', 'u-3']);
  });

  it('get a delivery log item of their own when the alarms expire first (a retention under 30 days)', async () => {
    const taskId = 900_000_000 + Math.floor(Math.random() * 1e6);
    const t0 = Date.now();
    const expires = Math.floor(t0 / 1000) + 7 * 86_400;
    await putBatchLogs(
      [entry(taskId, 'u-1', expires, Math.floor(t0 / 1000))],
      [attempt(taskId, 'e-1', t0)],
      t0 + 100,
    );
    const [log] =
      (
        await db().send(
          new QueryCommand({
            TableName: tableName(),
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': keys.webhookLogDay(taskId, Math.floor(t0 / 86_400_000)) },
          }),
        )
      ).Items ?? [];
    expect(log?.ttl).toBe(Math.floor(t0 / 1000) + 30 * 86_400);
    expect(await listAttemptsOfEvent('e-1', { taskId, fromMs: t0 - 1000, toMs: t0 + 1000 })).toHaveLength(1);
  });
});

describe('PartiQL statements on DynamoDB Local (it keeps each text parsed)', () => {
  const insert = (pk: string, sk: string, v: string) => ({
    Statement: `INSERT INTO "${tableName()}" VALUE {'pk': ?, 'sk': ?, 'v': ?}`,
    Parameters: [pk, sk, v],
  });

  it("bind each request's own parameters to a text parsed before", async () => {
    // Arrange
    const pk = `TEST#${unique()}`;
    // Act: one text, batch after batch, each with its own values
    for (const round of [1, 2, 3])
      await db().send(
        new BatchExecuteStatementCommand({
          Statements: [insert(pk, `a${round}`, `x${round}`), insert(pk, `b${round}`, `y${round}`)],
        }),
      );
    const again = await db().send(
      new BatchExecuteStatementCommand({ Statements: [insert(pk, 'a2', 'other')] }),
    );
    // Assert
    for (const round of [1, 2, 3]) {
      expect((await get(pk, `a${round}`))?.v).toBe(`x${round}`);
      expect((await get(pk, `b${round}`))?.v).toBe(`y${round}`);
    }
    expect(again.Responses?.[0]?.Error?.Code).toBe('DuplicateItem');
    expect((await get(pk, 'a2'))?.v).toBe('x2');
  });

  it('page a SELECT with continuation tokens (its processors share one object mapper)', async () => {
    const pk = `TEST#${unique()}`;
    await db().send(
      new BatchExecuteStatementCommand({ Statements: ['a', 'b', 'c'].map((sk) => insert(pk, sk, sk)) }),
    );
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    for (; pages < 5; pages++) {
      const out = await db().send(
        new ExecuteStatementCommand({
          Statement: `SELECT sk FROM "${tableName()}" WHERE pk = ?`,
          Parameters: [pk],
          Limit: 1,
          NextToken: token,
        }),
      );
      seen.push(...(out.Items ?? []).map((i) => String(i.sk)));
      token = out.NextToken;
      if (!token) break;
    }
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(pages).toBeGreaterThanOrEqual(2);
  });

  it('refuse a malformed text every time, and still parse the valid texts sent after it', async () => {
    const pk = `TEST#${unique()}`;
    const bad = { Statement: `INSERT INTO "${tableName()}" VALUE {'pk': ?,`, Parameters: ['x'] };
    for (const sk of ['after-1', 'after-2']) {
      const out = await db()
        .send(new BatchExecuteStatementCommand({ Statements: [bad, insert(pk, sk, sk)] }))
        .then((r) => (r.Responses ?? []).map((x) => x.Error?.Code ?? 'ok'));
      expect(out).toEqual(['ValidationError', 'ok']);
      expect((await get(pk, sk))?.v).toBe(sk);
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
