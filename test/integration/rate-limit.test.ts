import { randomInt } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { minuteOfSecond, secondAttribute } from '../../shared/domain/alarms/rate-repository.ts';
import {
  CAP_RETRY_AFTER_SECONDS,
  RateLimiter,
  tableRateStore,
} from '../../shared/domain/alarms/rate-limit.ts';
import { api, baseUrl, serviceNow, taskAuth } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * The per-task rate limit on the running service (docs/rate-limits.md): every alert of an adapter
 * post counts, a post of more alerts than the limit is refused whole with 429 and Retry-After, and
 * the count is shared through the table, so limiters of different containers together stay within
 * the limit.
 */
const receiver = new TestReceiver();
beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

/** A task's ALARM events (each once under the chaos queue, by webhook-id). */
const alarmsOf = (t: { id: number }): Received[] =>
  eachOnce(
    receiver.received.filter((r) => r.json?.data?.task?.id === t.id && r.json.event === 'ALARM'),
    (r) => r.headers['webhook-id'],
  );

/** Longer than the pipeline takes to deliver an alarm queued with the ones awaited. */
const settle = () => new Promise((r) => setTimeout(r, 1_500));

/** A task with a webhook receiver, limited to `limit` alarms per second, and its intake token. */
async function limitedTask(limit: number): Promise<{ t: CreatedTask; token: string }> {
  const t = await createTask({ receiver: { channels: { email: [1], webhook: receiver.url } } });
  const set = await api.put('/alarmtask/ratelimit', { ...(await taskAuth(t)), rate_limit: limit });
  expect(set.data).toEqual({ id: t.id, rate_limit: limit, default: false });
  const issued = await api.put('/alarmtask/intake', { ...(await taskAuth(t)) });
  return { t, token: issued.data.intake_token as string };
}

/** An Alertmanager (webhook v4) notification of `n` firing alerts, fingerprints `<tag>-<i>`. */
function notification(n: number, tag: string) {
  return {
    version: '4',
    groupKey: `{}:{alertname="Flood-${tag}"}`,
    truncatedAlerts: 0,
    status: 'firing',
    receiver: 'tocsin',
    groupLabels: { alertname: `Flood-${tag}` },
    commonLabels: { alertname: `Flood-${tag}` },
    commonAnnotations: {},
    externalURL: 'http://alertmanager.example:9093',
    alerts: Array.from({ length: n }, (_, i) => ({
      status: 'firing',
      labels: { alertname: `Flood-${tag}`, instance: `node-${i}:9100`, severity: 'warning' },
      annotations: { summary: `node-${i} is flooding` },
      startsAt: '2026-11-24T08:00:00.000Z',
      endsAt: '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus.example:9090/graph',
      fingerprint: `${tag}-${i}`,
    })),
  };
}

interface Answer {
  status: number;
  retryAfter: string | null;
  code: number;
  msg: string;
  // biome-ignore lint/suspicious/noExplicitAny: response data of any shape
  data: any;
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(new URL(path, baseUrl()), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { code: number; msg: string; data: unknown };
  return { status: res.status, retryAfter: res.headers.get('retry-after'), ...json };
}

const alertmanager = (t: CreatedTask, token: string, body: unknown) =>
  post(`/alarm/alertmanager?taskid=${t.id}`, body, { authorization: `Bearer ${token}` });

const fingerprintsOf = (events: Received[]) =>
  events.map((e) => e.json.data.history.ctn.fingerprint as string).sort();

describe('adapter posts: every alert counts', () => {
  it('a 100-alert Alertmanager post to a task limited to 5/s gets 429 with Retry-After and delivers nothing; a 3-alert post is taken', async () => {
    // Arrange
    const { t, token } = await limitedTask(5);
    // Act
    const flood = await alertmanager(t, token, notification(100, 'flood'));
    const small = await alertmanager(t, token, notification(3, 'small'));
    await receiver.waitFor(() => alarmsOf(t).length >= 3);
    await settle();
    // Assert: the flood is refused whole with the per-request cap in its message
    expect(flood).toMatchObject({
      status: 429,
      retryAfter: String(CAP_RETRY_AFTER_SECONDS),
      code: 4010,
      msg: `request of 100 alarms exceeds the per-request cap of 5 (the rate limit of task [${t.id}]): lower the monitor's max_alerts to at most 5`,
    });
    expect(small).toMatchObject({ status: 200, code: 0 });
    expect(small.data.uuids).toHaveLength(3);
    // Only the 3 alerts of the small post reached the webhook: nothing of the flood was queued
    expect(fingerprintsOf(alarmsOf(t))).toEqual(['small-0', 'small-1', 'small-2']);
  });

  it('a post within the cap but over what is left of the second gets 429 with Retry-After 1', async () => {
    // Arrange
    const { t, token } = await limitedTask(5);
    // Act: six posts of 5 alerts at once; a second takes one of them
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => alertmanager(t, token, notification(5, `burst${i}`))),
    );
    const taken = answers.filter((a) => a.status === 200);
    await receiver.waitFor(() => alarmsOf(t).length >= taken.length * 5);
    await settle();
    // Assert
    const refused = answers.filter((a) => a.status === 429);
    expect(taken.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(taken.length + refused.length).toBe(6);
    for (const r of refused)
      expect(r).toMatchObject({
        retryAfter: '1',
        code: 4010,
        msg: `task [${t.id}] reached its rate limit of 5 alarms per second`,
      });
    // What was taken is delivered, what was refused is not
    const takenTags = answers.flatMap((a, i) => (a.status === 200 ? [`burst${i}`] : []));
    expect(new Set(fingerprintsOf(alarmsOf(t)).map((f) => f.split('-')[0]))).toEqual(new Set(takenTags));
    expect(alarmsOf(t)).toHaveLength(taken.length * 5);
  });
});

describe('POST /alarm/report at its limit', () => {
  it('answers 4010 in an HTTP 200 envelope with Retry-After', async () => {
    // Arrange
    const { t } = await limitedTask(2);
    const now = await serviceNow();
    const body = { taskid: t.id, timestamp: now, sign: hmacSign(t.token, t.id, now), ctn: { host: 'web-1' } };
    // Act
    const answers = await Promise.all(Array.from({ length: 8 }, () => post('/alarm/report', body)));
    // Assert
    const limited = answers.filter((a) => a.code === 4010);
    expect(answers.filter((a) => a.code === 0).length).toBeGreaterThanOrEqual(1);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    for (const a of limited)
      expect(a).toMatchObject({
        status: 200,
        retryAfter: '1',
        msg: `task [${t.id}] reached its rate limit of 2 alarms per second`,
      });
    expect(answers.every((a) => a.code === 0 || a.code === 4010)).toBe(true);
  });
});

describe('limiters of different containers share one count in the table', () => {
  /** A task id no other test uses (the limiter needs no task item). */
  const freshTask = () => 900_000_000 + randomInt(1_000_000);

  async function usedOf(taskId: number, second: number): Promise<number | undefined> {
    const out = await db().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.rateWindow(taskId, minuteOfSecond(second)),
        ConsistentRead: true,
      }),
    );
    return out.Item?.[secondAttribute(second)] as number | undefined;
  }

  it('taking turns, two limiters admit exactly the limit of a second together, and no more', async () => {
    // Arrange: two "containers" at the same moment; a long timeout (the machine may be busy)
    const task = freshTask();
    const at = { now: 1_700_000_000_000 + randomInt(1_000) * 1000 };
    const [a, b] = [0, 1].map(
      () => new RateLimiter({ store: tableRateStore, now: () => at.now, timeoutMs: 30_000 }),
    );
    let admitted = 0;
    // Act: 30 alarms each, alternately, at a limit of 20
    for (let i = 0; i < 30; i++) {
      if ((await a.take(task, 20)).ok) admitted++;
      if ((await b.take(task, 20)).ok) admitted++;
    }
    // Assert
    expect(admitted).toBe(20);
    expect(await usedOf(task, Math.floor(at.now / 1000))).toBe(20);
  });

  it('bursts at the same time from two limiters stay within the limit in every second', async () => {
    // Arrange
    const task = freshTask();
    const at = { now: 1_700_000_000_000 + randomInt(1_000) * 1000 };
    const [a, b] = [0, 1].map(
      () => new RateLimiter({ store: tableRateStore, now: () => at.now, timeoutMs: 30_000 }),
    );
    const perSecond: number[] = [];
    // Act: three seconds, each with 40 concurrent requests of 1-3 alarms per limiter, limit 25
    for (let s = 0; s < 3; s++) {
      const wave = await Promise.all(
        Array.from({ length: 80 }, async (_, i) => {
          const n = 1 + (i % 3);
          return (await (i % 2 === 0 ? a : b).take(task, 25, n)).ok ? n : 0;
        }),
      );
      perSecond.push(wave.reduce((x, y) => x + y, 0));
      at.now += 1_000;
    }
    // Assert: never over 25 a second, neither in what was admitted nor in the table's count
    const seconds = [0, 1, 2].map((s) => Math.floor(at.now / 1000) - 3 + s);
    const counted = await Promise.all(seconds.map((s) => usedOf(task, s)));
    for (const n of perSecond) expect(n).toBeLessThanOrEqual(25);
    for (const n of counted) expect(n).toBeLessThanOrEqual(25);
    // Every second admitted something (the leases did their work)
    for (const n of perSecond) expect(n).toBeGreaterThan(0);
  });

  it('the window items expire (TTL) a minute after their minute', async () => {
    const task = freshTask();
    const at = 1_700_000_123_456;
    const limiter = new RateLimiter({ store: tableRateStore, now: () => at, timeoutMs: 30_000 });
    expect((await limiter.take(task, 10)).ok).toBe(true);
    const item = await db().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.rateWindow(task, Math.floor(1_700_000_123 / 60)),
        ConsistentRead: true,
      }),
    );
    expect(item.Item).toMatchObject({
      entity: 'rate_window',
      schema_version: 1,
      ttl: (Math.floor(1_700_000_123 / 60) + 1) * 60 + 60,
      [secondAttribute(1_700_000_123)]: 1,
    });
  });

  it('a quiet task reserves its next seconds in the same item, each within half the limit', async () => {
    // Arrange: second 10 of a minute, a limit of 40 (a tenth: 4, half: 20)
    const task = freshTask();
    const minute = Math.floor(1_700_000_000 / 60) + randomInt(1_000);
    const at = { now: (minute * 60 + 10) * 1000 };
    const [a, b] = [0, 1].map(
      () => new RateLimiter({ store: tableRateStore, now: () => at.now, timeoutMs: 30_000 }),
    );
    // Act: one alarm on each of two containers, then the next second's alarms on the first
    expect((await a.take(task, 40)).ok).toBe(true);
    expect((await b.take(task, 40)).ok).toBe(true);
    at.now += 1_000;
    const next = await Promise.all([a.take(task, 40), a.take(task, 40)]);
    // Assert: each leased 2 in second 10 and reserved 2 in seconds 11 .. 59; the first spent its 2 of
    // second 11 without a lease
    expect(next.every((r) => r.ok)).toBe(true);
    expect(await usedOf(task, minute * 60 + 10)).toBe(4);
    expect(await usedOf(task, minute * 60 + 11)).toBe(4);
    expect(await usedOf(task, minute * 60 + 59)).toBe(4);
    expect(await usedOf(task, minute * 60 + 9)).toBeUndefined();
  });
});
