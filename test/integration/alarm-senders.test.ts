import { Agent, request } from 'node:http';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { md5Sign } from '../../shared/domain/auth/signature.ts';
import { api, baseUrl, serviceNow, taskAuth } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';

/**
 * The exact request bodies the original system's SDKs send (alarm-dog Java, Go and PHP SDKs: field
 * order, types and empty receivers as their serializers write them), signed with MD5 as they sign.
 * Each must be accepted unchanged (API guide §2.2, §3.3, §7.1), and every refusal must reach them as HTTP
 * 200 with the code in the envelope: the Go and PHP SDKs read nothing else of a non-200 answer.
 */

interface Answer {
  status: number;
  retryAfter: string | null;
  code: number;
  msg: string;
  data: { uuid?: string };
}

async function post(
  path: string,
  body: string,
  contentType = 'application/json; charset=utf-8',
): Promise<Answer> {
  const res = await fetch(`${baseUrl()}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
  });
  const json = (await res.json()) as Omit<Answer, 'status' | 'retryAfter'>;
  return { status: res.status, retryAfter: res.headers.get('retry-after'), ...json };
}

/** The signature every SDK computes: md5(taskid + "&" + timestamp + token). */
async function signed(t: CreatedTask, offsetSeconds = 0) {
  const ts = (await serviceNow()) + offsetSeconds;
  return { ts, sign: md5Sign(t.token, t.id, ts) };
}

const SENDERS: [string, (t: CreatedTask, ts: number, sign: string) => string][] = [
  [
    'Java report(content): empty receiver and top-level channels, yachGroups, dingGroups',
    (t, ts, sign) =>
      `{"channels":{},"yachGroups":[],"dingGroups":[],"taskid":${t.id},"timestamp":"${ts}","sign":"${sign}","receiver":{},"ctn":{"error":"disk full","errno":28},"level":0}`,
  ],
  [
    'Java report(content, level, noticeTime): notice_time as a numeric string',
    (t, ts, sign) =>
      `{"channels":{},"yachGroups":[],"dingGroups":[],"taskid":${t.id},"timestamp":"${ts}","sign":"${sign}","notice_time":"${ts - 60}","receiver":{},"ctn":{"error":"oom"},"level":3}`,
  ],
  [
    'Java with alarm groups and e-mail set',
    (t, ts, sign) =>
      `{"channels":{"email":[1]},"yachGroups":[],"dingGroups":[],"taskid":${t.id},"timestamp":"${ts}","sign":"${sign}","receiver":{"channels":{"email":[1]},"alarmgroup":[1]},"ctn":{"trace":"t-1"},"level":1}`,
  ],
  [
    'Go Report with an empty receiver (level 0 and notice_time omitted)',
    (t, ts, sign) =>
      `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"host":"web-1"},"receiver":{}}`,
  ],
  [
    'Go Report with level, notice_time and a webhook list',
    (t, ts, sign) =>
      `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"host":"web-2"},"notice_time":${ts},"level":2,"receiver":{"channels":{"email":[2],"webhook":["https://hooks.example.com/cb"]}}}`,
  ],
  [
    'PHP report() without a receiver',
    (t, ts, sign) => `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"errno":500,"error":"x"}}`,
  ],
  [
    'PHP new Receiver([1, 2])',
    (t, ts, sign) =>
      `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"a":"b"},"notice_time":${ts},"level":1,"receiver":{"alarmgroup":[1,2],"channels":[]}}`,
  ],
  [
    'PHP new Receiver() (nobody)',
    (t, ts, sign) =>
      `{"taskid":"${t.id}","timestamp":${ts},"sign":"${sign}","ctn":{"a":"c"},"receiver":{"alarmgroup":[],"channels":[]}}`,
  ],
];

describe('existing alarm senders work unchanged', () => {
  const hook = new TestReceiver();
  let t: CreatedTask;

  beforeAll(async () => {
    await hook.start();
    t = await createTask({ receiver: { channels: { email: [1], webhook: `${hook.url}/in` } } });
  });
  afterAll(() => hook.stop());

  it.each(SENDERS)('%s is accepted and delivered', async (_name, body) => {
    // Arrange
    const { ts, sign } = await signed(t);
    // Act
    const res = await post('/alarm/report', body(t, ts, sign));
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0, msg: 'success' });
    await hook.waitFor((all) => all.some((r) => r.json?.data?.history?.uuid === res.data.uuid));
  });

  it('a shell sender with curl -d (form content type) and a 25-minute-old timestamp is accepted', async () => {
    const { ts, sign } = await signed(t, -25 * 60);
    const res = await post(
      '/alarm/report',
      `{"taskid":"${t.id}","timestamp":"${ts}","sign":"${sign}","ctn":{"x":1}}`,
      'application/x-www-form-urlencoded',
    );
    expect(res).toMatchObject({ status: 200, code: 0 });
  });

  it('the SDK test calls (Java and PHP bodies) answer success', async () => {
    const { ts, sign } = await signed(t);
    const java = await post(
      '/alarm/test',
      `{"channels":{},"yachGroups":[],"dingGroups":[],"taskid":${t.id},"timestamp":"${ts}","sign":"${sign}","receiver":{}}`,
    );
    const php = await post('/alarm/test', `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}"}`);
    expect(java).toMatchObject({ status: 200, code: 0, data: {} });
    expect(php).toMatchObject({ status: 200, code: 0, data: {} });
  });

  it('a sender with a connection pool reports again on a connection idle for 6 s', async () => {
    // Arrange: a pool like Go's net/http (idle connections kept 90 s), one connection.
    const pool = new Agent({ keepAlive: true, maxSockets: 1 });
    const report = async () => {
      const { ts, sign } = await signed(t);
      const body = `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"pool":1}}`;
      return new Promise<{ code: number; reused: boolean }>((resolve, reject) => {
        const req = request(
          `${baseUrl()}/alarm/report`,
          { method: 'POST', agent: pool, headers: { 'content-type': 'application/json' } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ code: JSON.parse(Buffer.concat(chunks).toString()).code, reused: req.reusedSocket }),
            );
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    };
    try {
      const first = await report();
      await new Promise((r) => setTimeout(r, 6_000));
      // Act
      const second = await report();
      // Assert: the server kept the connection (a server closing it at 5 s races such a sender).
      expect(first).toEqual({ code: 0, reused: false });
      expect(second).toEqual({ code: 0, reused: true });
    } finally {
      pool.destroy();
    }
  });
});

describe('refusals reach the SDKs as HTTP 200 with the code in the envelope (API guide §2.2)', () => {
  it.each([
    ['a bad signature', 'sign', 401, 'signature invalid'],
    ['a timestamp 31 minutes old', 'stale', 401, 'signature was expired'],
    ['an invalid body', 'ctn', 4000, 'ctn must be a JSON object'],
  ])('%s: code %i', async (_name, kind, code, msg) => {
    // Arrange
    const t = await createTask();
    const { ts, sign } = await signed(t, kind === 'stale' ? -31 * 60 : 0);
    const body =
      kind === 'sign'
        ? `{"taskid":${t.id},"timestamp":${ts},"sign":"${'0'.repeat(32)}","ctn":{"a":1}}`
        : kind === 'ctn'
          ? `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":[1]}`
          : `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"a":1}}`;
    // Act
    const res = await post('/alarm/report', body);
    // Assert
    expect(res).toMatchObject({ status: 200, code, msg });
  });

  it('a stopped and a paused task: 4001 and 4002', async () => {
    const stopped = await createTask();
    const paused = await createTask();
    await api.put('/alarmtask/stop', await taskAuth(stopped));
    await api.put('/alarmtask/pause', { ...(await taskAuth(paused)), time: 5 });
    const a = await signed(stopped);
    const b = await signed(paused);
    const resA = await post(
      '/alarm/report',
      `{"taskid":${stopped.id},"timestamp":${a.ts},"sign":"${a.sign}","ctn":{"a":1}}`,
    );
    const resB = await post(
      '/alarm/report',
      `{"taskid":${paused.id},"timestamp":${b.ts},"sign":"${b.sign}","ctn":{"a":1}}`,
    );
    expect(resA).toMatchObject({ status: 200, code: 4001, msg: 'task was stopped' });
    expect(resB).toMatchObject({ status: 200, code: 4002, msg: 'task was paused' });
  });

  it('the rate limit: 4010 with Retry-After', async () => {
    // Arrange: a task limited to 1 alarm per second
    const t = await createTask();
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(t.id),
        UpdateExpression: 'SET rate_limit = :one',
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
    const { ts, sign } = await signed(t);
    const body = `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"a":1}}`;
    // Act
    const answers = await Promise.all(Array.from({ length: 6 }, () => post('/alarm/report', body)));
    // Assert
    const limited = answers.find((a) => a.code === 4010);
    expect(limited).toMatchObject({ status: 200, retryAfter: '1' });
    expect(answers.filter((a) => a.code === 0).length).toBeGreaterThanOrEqual(1);
  });

  it('a body over 256 KiB keeps HTTP 413', async () => {
    const t = await createTask();
    const { ts, sign } = await signed(t);
    const res = await post(
      '/alarm/report',
      `{"taskid":${t.id},"timestamp":${ts},"sign":"${sign}","ctn":{"a":"${'x'.repeat(300 * 1024)}"}}`,
    );
    expect(res).toMatchObject({ status: 413, code: 413 });
  });
});
