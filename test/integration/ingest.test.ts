import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { hmacSign, md5Sign } from '../../shared/domain/auth/signature.ts';
import { api, call, type Envelope, serviceNow, taskAuth } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * POST /alarm/report and POST /alarm/test against the real local stack (API guide §3.3, §7).
 * Every scenario uses its own task: the endpoint caches task reads for a few seconds, and a fresh task
 * has never been read before its status is changed.
 */
type Scheme = 'md5' | 'hmac';

async function alarmAuth(
  t: { id: number; token: string },
  opts: { scheme?: Scheme; timestamp?: number } = {},
) {
  const timestamp = opts.timestamp ?? (await serviceNow());
  const sign = (opts.scheme === 'md5' ? md5Sign : hmacSign)(t.token, t.id, timestamp);
  return { taskid: t.id, timestamp, sign };
}

function report(body: unknown, path = '/alarm/report'): Promise<Envelope> {
  return call('POST', path, { app: null, json: body });
}

function formatUtc(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19);
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('POST /alarm/report: acceptance (API guide §7.1)', () => {
  it('accepts an HMAC-signed report and answers a v4 uuid and report_time in UTC', async () => {
    // Arrange
    const t = await createTask();
    const before = await serviceNow();
    // Act
    const res = await report({
      ...(await alarmAuth(t)),
      ctn: { hostname: 'web-1', msg: 'disk full' },
      level: 2,
    });
    const after = await serviceNow();
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0, msg: 'success' });
    expect(Object.keys(res.data).sort()).toEqual(['report_time', 'uuid']);
    expect(res.data.uuid).toMatch(UUID_V4);
    expect(res.data.report_time).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(res.data.report_time >= formatUtc(before)).toBe(true);
    expect(res.data.report_time <= formatUtc(after)).toBe(true);
  });

  it('accepts the legacy MD5 signature with taskid and timestamp as numeric strings', async () => {
    const t = await createTask();
    const auth = await alarmAuth(t, { scheme: 'md5' });
    const res = await report({
      taskid: String(t.id),
      timestamp: String(auth.timestamp),
      sign: auth.sign,
      ctn: { a: 1 },
    });
    expect(res).toMatchObject({ status: 200, code: 0 });
    expect(res.data.uuid).toMatch(UUID_V4);
  });

  it('accepts a receiver override and a notice_time', async () => {
    const t = await createTask();
    const res = await report({
      ...(await alarmAuth(t)),
      ctn: { a: 1 },
      notice_time: 1700000000,
      receiver: { alarmgroup: [1], channels: { sms: [4], webhook: { url: 'https://hooks.example.com/x' } } },
    });
    expect(res).toMatchObject({ status: 200, code: 0 });
  });
});

describe('POST /alarm/report: authentication (API guide §3.3)', () => {
  it('refuses a bad signature, the task secret, an unknown task and a stale timestamp with 401', async () => {
    // Arrange
    const t = await createTask();
    const now = await serviceNow();
    // Act
    const badSign = await report({
      taskid: t.id,
      timestamp: now,
      sign: md5Sign('nope', t.id, now),
      ctn: { a: 1 },
    });
    const withSecret = await report({ ...(await alarmAuth({ id: t.id, token: t.secret })), ctn: { a: 1 } });
    const unknown = await report({ ...(await alarmAuth({ id: 987654321, token: t.token })), ctn: { a: 1 } });
    const stale = await report({ ...(await alarmAuth(t, { timestamp: now - 1801 })), ctn: { a: 1 } });
    const missing = await report({ ctn: { a: 1 } });
    // Assert
    expect(badSign).toMatchObject({ status: 200, code: 401, msg: 'signature invalid', data: {} });
    expect(withSecret).toMatchObject({ status: 200, code: 401, msg: 'signature invalid' });
    expect(unknown).toMatchObject({ status: 200, code: 401, msg: 'signature invalid' });
    expect(stale).toMatchObject({ status: 200, code: 401, msg: 'signature was expired' });
    expect(missing).toMatchObject({ status: 200, code: 401, msg: 'signature was expired' });
  });

  it('refuses the alarms of a deleted task with 401 signature invalid', async () => {
    // Arrange
    const t = await createTask();
    const del = await api.delete('/alarmtask', { form: await taskAuth(t) });
    expect(del.code).toBe(0);
    // Act
    const res = await report({ ...(await alarmAuth(t)), ctn: { a: 1 } });
    // Assert
    expect(res).toMatchObject({ status: 200, code: 401, msg: 'signature invalid' });
  });

  it('authenticates before it validates the body', async () => {
    const res = await report({ taskid: 1, timestamp: await serviceNow(), sign: 'x', ctn: 'not an object' });
    expect(res).toMatchObject({ status: 200, code: 401, msg: 'signature invalid' });
  });
});

describe('POST /alarm/report: refusals', () => {
  it.each([
    ['a missing ctn', {}, 'ctn must be a JSON object'],
    ['a ctn that is an array', { ctn: [1, 2] }, 'ctn must be a JSON object'],
    ['an empty ctn', { ctn: {} }, 'ctn must not be empty'],
    ['level 4', { ctn: { a: 1 }, level: 4 }, 'level must be one of 0, 1, 2, 3'],
    ['a string notice_time', { ctn: { a: 1 }, notice_time: 'now' }, 'notice_time must be an integer'],
    ['a uuid that is not a UUID', { ctn: { a: 1 }, uuid: 'abc' }, 'uuid must be a UUID'],
    [
      'a receiver uid that is not an integer',
      { ctn: { a: 1 }, receiver: { channels: { sms: ['x'] } } },
      'receiver.channels.sms.0 must be an integer',
    ],
    [
      'an unknown alarm group',
      { ctn: { a: 1 }, receiver: { alarmgroup: [1, 99] } },
      'receiver.alarmgroup: alarm group [99] not found',
    ],
  ])('refuses %s with 4000', async (_name, body, msg) => {
    const t = await createTask();
    const res = await report({ ...(await alarmAuth(t)), ...body });
    expect(res).toMatchObject({ status: 200, code: 4000, msg });
  });

  it('refuses a stopped task with 4001', async () => {
    // Arrange
    const t = await createTask();
    expect((await api.put('/alarmtask/stop', await taskAuth(t))).code).toBe(0);
    // Act
    const res = await report({ ...(await alarmAuth(t)), ctn: { a: 1 } });
    // Assert
    expect(res).toMatchObject({ status: 200, code: 4001, msg: 'task was stopped' });
  });

  it('refuses a paused task with 4002', async () => {
    const t = await createTask();
    expect((await api.put('/alarmtask/pause', { ...(await taskAuth(t)), time: 30 })).code).toBe(0);
    const res = await report({ ...(await alarmAuth(t)), ctn: { a: 1 } });
    expect(res).toMatchObject({ status: 200, code: 4002, msg: 'task was paused' });
  });

  it("refuses alarms beyond the task's rate limit with 4010 (429)", async () => {
    // Arrange: a task allowed 1 alarm per second (set in the table before its first report)
    const t = await createTask();
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(t.id),
        UpdateExpression: 'SET rate_limit = :one',
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
    const auth = await alarmAuth(t);
    // Act: 10 at once; passing them all would take 9 s at 1 per second
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => report({ ...auth, ctn: { i } })));
    // Assert
    const limited = results.filter((r) => r.code === 4010);
    expect(results.filter((r) => r.code === 0).length).toBeGreaterThanOrEqual(1);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited[0]).toMatchObject({
      status: 200,
      msg: `task [${t.id}] reached its rate limit of 1 alarms per second`,
    });
    expect(results.every((r) => r.code === 0 || r.code === 4010)).toBe(true);
  });

  it('refuses a body over 256 KiB with HTTP 413 and a body that is not JSON with code 400 (HTTP 200)', async () => {
    const t = await createTask();
    const big = await report({ ...(await alarmAuth(t)), ctn: { blob: 'x'.repeat(300 * 1024) } });
    const notJson = await call('POST', '/alarm/report', {
      app: null,
      body: '{"taskid": 1,',
      headers: { 'content-type': 'application/json' },
    });
    expect(big).toMatchObject({ status: 413, code: 413, msg: 'request body too large' });
    expect(notJson).toMatchObject({ status: 200, code: 400, msg: 'request body is not valid JSON' });
  });
});

describe('POST /alarm/report: idempotent reports with a client uuid', () => {
  it('answers a repeat with the first answer and keeps one receipt for 24 h', async () => {
    // Arrange
    const t = await createTask();
    const uuid = crypto.randomUUID();
    const body = { ...(await alarmAuth(t)), ctn: { a: 1 }, uuid: uuid.toUpperCase() };
    // Act
    const first = await report(body);
    const second = await report(body);
    const receipt = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.reportReceipt(uuid) }),
    );
    // Assert
    expect(first).toMatchObject({ status: 200, code: 0, data: { uuid } });
    expect(second.data).toEqual(first.data);
    expect(receipt.Item).toMatchObject({ uuid, task_id: t.id, report_time: first.data.report_time });
    expect(receipt.Item?.ttl - (await serviceNow())).toBeGreaterThan(86_000);
  });

  it("refuses another task's uuid with 4000", async () => {
    const [a, b] = await Promise.all([createTask(), createTask()]);
    const uuid = crypto.randomUUID();
    const first = await report({ ...(await alarmAuth(a)), ctn: { a: 1 }, uuid });
    const other = await report({ ...(await alarmAuth(b)), ctn: { a: 1 }, uuid });
    expect(first.code).toBe(0);
    expect(other).toMatchObject({ status: 200, code: 4000, msg: 'uuid was already used by another task' });
  });

  it('two tasks racing one uuid: the loser gets 4000 and its alarm is never processed', async () => {
    // Arrange: each task has its own webhook receiver
    const hookA = await new TestReceiver().start();
    const hookB = await new TestReceiver().start();
    try {
      const [a, b] = await Promise.all([
        createTask({ receiver: { channels: { webhook: `${hookA.url}/a` } } }),
        createTask({ receiver: { channels: { webhook: `${hookB.url}/b` } } }),
      ]);
      const uuids = Array.from({ length: 5 }, () => crypto.randomUUID());
      // Act: both report every uuid at the same moment
      const answers = await Promise.all(
        uuids.map(async (uuid) => {
          const [ra, rb] = await Promise.all([
            report({ ...(await alarmAuth(a)), ctn: { from: 'a' }, uuid }),
            report({ ...(await alarmAuth(b)), ctn: { from: 'b' }, uuid }),
          ]);
          return { uuid, ra, rb };
        }),
      );
      // Assert: one winner per uuid; only the winner's webhook ever hears of it
      for (const { ra, rb } of answers) expect([ra.code, rb.code].sort()).toEqual([0, 4000]);
      const winsA = answers.filter((x) => x.ra.code === 0).map((x) => x.uuid);
      const winsB = answers.filter((x) => x.rb.code === 0).map((x) => x.uuid);
      const heard = (h: TestReceiver) => h.events('ALARM').map((r) => r.json.data.history.uuid as string);
      await hookA.waitFor(() => winsA.every((u) => heard(hookA).includes(u)));
      await hookB.waitFor(() => winsB.every((u) => heard(hookB).includes(u)));
      await new Promise((r) => setTimeout(r, 1500));
      expect(heard(hookA).sort()).toEqual(winsA.sort());
      expect(heard(hookB).sort()).toEqual(winsB.sort());
    } finally {
      await hookA.stop();
      await hookB.stop();
    }
  });

  it('writes nothing to the table for a report without a uuid', async () => {
    const t: CreatedTask = await createTask();
    const res = await report({ ...(await alarmAuth(t)), ctn: { a: 1 } });
    const receipt = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.reportReceipt(res.data.uuid) }),
    );
    expect(res.code).toBe(0);
    expect(receipt.Item).toBeUndefined();
  });
});

describe('POST /alarm/test (API guide §7.2)', () => {
  it('answers success with empty data for a good signature (MD5 or HMAC)', async () => {
    const t = await createTask();
    const md5 = await report(await alarmAuth(t, { scheme: 'md5' }), '/alarm/test');
    const hmac = await report(await alarmAuth(t), '/alarm/test');
    expect(md5).toEqual({ status: 200, code: 0, msg: 'success', data: {} });
    expect(hmac).toEqual({ status: 200, code: 0, msg: 'success', data: {} });
  });

  it('refuses a bad signature and a stale timestamp', async () => {
    const t = await createTask();
    const now = await serviceNow();
    const bad = await report({ taskid: t.id, timestamp: now, sign: hmacSign('x', t.id, now) }, '/alarm/test');
    const stale = await report(await alarmAuth(t, { timestamp: now - 1801 }), '/alarm/test');
    expect(bad).toMatchObject({ status: 200, code: 401, msg: 'signature invalid' });
    expect(stale).toMatchObject({ status: 200, code: 401, msg: 'signature was expired' });
  });
});

describe('POST /alarm/report: through the pipeline to the webhook', () => {
  let receiver: TestReceiver;
  let t: CreatedTask;
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await createTask({ flag_save_db: 0, receiver: { channels: { webhook: receiver.url } } });
  });
  afterAll(() => receiver.stop());

  const alarmsOf = (uuid: string) =>
    eachOnce(
      receiver.events('ALARM').filter((r) => r.json?.data?.msg?.uuid === uuid),
      (r) => r.headers['webhook-id'],
    );

  it('delivers the accepted alarm as an ALARM event with its content, level and notice_time', async () => {
    // Act
    const res = await report({
      ...(await alarmAuth(t)),
      ctn: { hostname: 'db-1', load: 9.5 },
      level: 3,
      notice_time: 1700000000,
    });
    const uuid = res.data.uuid as string;
    await receiver.waitFor(() => alarmsOf(uuid).length > 0);
    // Assert
    const [got] = alarmsOf(uuid);
    expect(got.json).toEqual({
      event: 'ALARM',
      type: 'not_save_db',
      data: {
        task: { id: t.id, name: t.name },
        msg: { uuid, level: 3, leve: 3, ctn: { hostname: 'db-1', load: 9.5 }, notice_time: 1700000000 },
      },
      extra: {},
    });
  });

  it('processes a report repeated with the same uuid once', async () => {
    // Arrange
    const uuid = crypto.randomUUID();
    const body = { ...(await alarmAuth(t)), ctn: { n: 1 }, uuid };
    // Act: the same report three times, then a different one as a marker
    const answers = await Promise.all([report(body), report(body)]);
    answers.push(await report(body));
    const marker = await report({ ...(await alarmAuth(t)), ctn: { n: 2 } });
    await receiver.waitFor(() => alarmsOf(uuid).length > 0 && alarmsOf(marker.data.uuid).length > 0);
    await new Promise((r) => setTimeout(r, 500));
    // Assert
    expect(answers.map((a) => a.code)).toEqual([0, 0, 0]);
    expect(new Set(answers.map((a) => JSON.stringify(a.data))).size).toBe(1);
    expect(alarmsOf(uuid)).toHaveLength(1);
  });
});
