import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { hmacSign, md5Sign } from '../auth/signature.ts';
import { AlarmError, PayloadTooLargeError, UnauthorizedError } from '../errors.ts';
import { isSealed } from '../auth/seal.ts';
import type { Task } from '../tasks/model.ts';
import type { ReceiverConfig } from '../../contracts/receivers.ts';
import { openReceiverRobots } from '../channels/robots.ts';
import { MemoryRateStore, RateLimiter } from './rate-limit.ts';
import type { ReportReceipt } from './report-repository.ts';
import { formatDateTime } from '../../clock.ts';
import { authenticateAlarm, type ReportDeps, reportAlarm, testAlarm } from './report.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  process.env.ALARM_RATE_LIMIT = '3';
  process.env.REPORT_TIME_ZONE = 'UTC';
  resetConfig();
});

afterEach(() => {
  vi.useRealTimers();
});

const TOKEN = 'd3213fe78d9f81f448141495a274e0c700ad1c25';

function task(overrides: Partial<Task> = {}): Task {
  return { id: 100001, token: TOKEN, secret: 's'.repeat(40), status: 1, name: 't', ...overrides } as Task;
}

function fakeDeps(t: Task | undefined, extra: Partial<ReportDeps> = {}) {
  const published: AlarmMessage[] = [];
  const receipts = new Map<string, ReportReceipt>();
  const deps: ReportDeps = {
    getTask: async (id) => (t && id === t.id ? t : undefined),
    missingAlarmGroups: async (ids) => ids.filter((id) => id > 2),
    missingSchedules: async (ids) => ids.filter((id) => id > 5),
    outboundUrlErrors: async (receiver, prefix) =>
      JSON.stringify(receiver).includes('127.0.0.1')
        ? [
            {
              field: `${prefix}.channels.dinggroup.0.webhook`,
              message: 'must not point to a private or reserved address',
            },
          ]
        : [],
    publishAlarm: async (m) => {
      published.push(m);
    },
    signOfLife: async () => {},
    getReceipt: async (uuid) => receipts.get(uuid),
    putReceipt: async (r) => {
      const held = receipts.get(r.uuid);
      if (held) return held;
      receipts.set(r.uuid, r);
      return r;
    },
    queuedSoon: async (uuid) => receipts.get(uuid)?.queued === true,
    markReceiptQueued: async (uuid) => {
      const held = receipts.get(uuid);
      if (held) receipts.set(uuid, { ...held, queued: true });
    },
    limiter: new RateLimiter({ store: new MemoryRateStore(), now: () => 0 }),
    ...extra,
  };
  return { deps, published, receipts };
}

function signed(t: { id: number; token: string }, now: number, scheme: 'md5' | 'hmac' = 'hmac') {
  const sign = scheme === 'md5' ? md5Sign(t.token, t.id, now) : hmacSign(t.token, t.id, now);
  return { taskid: t.id, timestamp: now, sign };
}

const now = () => Math.floor(Date.now() / 1000);

describe('alarm authentication (API guide §3.3)', () => {
  it('accepts the documented MD5 test vector with numeric-string taskid and timestamp', async () => {
    // Arrange: the service clock at the vector's time
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1582650647 * 1000);
    const { deps } = fakeDeps(task());
    // Act
    const t = await authenticateAlarm(
      { taskid: '100001', timestamp: '1582650647', sign: 'f7a231040a1b05ad74f3264356016dae' },
      deps,
    );
    // Assert
    expect(t.id).toBe(100001);
  });

  it('accepts HMAC-SHA256 and upper-case hex', async () => {
    const { deps } = fakeDeps(task());
    const input = signed(task(), now());
    await expect(authenticateAlarm(input, deps)).resolves.toMatchObject({ id: 100001 });
    await expect(authenticateAlarm({ ...input, sign: input.sign.toUpperCase() }, deps)).resolves.toBeTruthy();
  });

  it.each([
    ['an unknown task', { taskid: 999 }, 'signature invalid'],
    ['a bad signature', { sign: md5Sign('wrong', 100001, 'X') }, 'signature invalid'],
    ['a missing sign', { sign: undefined }, 'signature invalid'],
    ['a taskid that is not a number', { taskid: '10a' }, 'signature invalid'],
    ['a stale timestamp', { timestamp: 1000 }, 'signature was expired'],
    ['a missing timestamp', { timestamp: undefined }, 'signature was expired'],
    ['a timestamp that is not a number', { timestamp: '12x' }, 'signature was expired'],
  ])('refuses %s with 401', async (_name, patch, msg) => {
    // Arrange
    const { deps } = fakeDeps(task());
    const input = { ...signed(task(), now()), ...patch };
    // Act
    const err = await authenticateAlarm(input, deps).catch((e) => e);
    // Assert
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err).toMatchObject({ status: 401, code: 401, message: msg });
  });

  it('checks the skew before reading the task, so unknown tasks cannot be probed', async () => {
    const getTask = vi.fn(async () => task());
    await expect(authenticateAlarm({ taskid: 5, timestamp: 1, sign: 'x' }, { getTask })).rejects.toThrow(
      'signature was expired',
    );
    expect(getTask).not.toHaveBeenCalled();
  });

  it('/alarm/test answers {} and queues nothing', async () => {
    const { deps, published } = fakeDeps(task());
    await expect(testAlarm(signed(task(), now()), deps)).resolves.toEqual({});
    expect(published).toHaveLength(0);
  });
});

describe('report validation (4000)', () => {
  it.each([
    ['missing ctn', { ctn: undefined }, 'ctn must be a JSON object'],
    ['ctn as an array', { ctn: [1] }, 'ctn must be a JSON object'],
    ['ctn as a string', { ctn: '{"a":1}' }, 'ctn must be a JSON object'],
    ['an empty ctn', { ctn: {} }, 'ctn must not be empty'],
    ['level 4', { level: 4 }, 'level must be one of 0, 1, 2, 3'],
    ['level as a string', { level: '1' }, 'level must be one of 0, 1, 2, 3'],
    ['a fractional notice_time', { notice_time: 1.5 }, 'notice_time must be an integer'],
    ['a uuid that is not one', { uuid: 'abc' }, 'uuid must be a UUID'],
    [
      'a receiver user that is not a uid',
      { receiver: { channels: { sms: ['a'] } } },
      'receiver.channels.sms.0 must be an integer',
    ],
    [
      'a receiver webhook that is not a URL',
      { receiver: { channels: { webhook: 'ftp://x' } } },
      'receiver.channels.webhook',
    ],
    [
      'an unknown alarm group',
      { receiver: { alarmgroup: [1, 7, 9] } },
      'receiver.alarmgroup: alarm group [7, 9] not found',
    ],
    [
      'an unknown schedule',
      {
        receiver: {
          oncall: [
            { schedule_id: 3, channels: ['email'] },
            { schedule_id: 8, channels: ['sms'] },
          ],
        },
      },
      'receiver.oncall: schedule [8] not found',
    ],
    [
      'an on-call receiver without channels',
      { receiver: { oncall: [{ schedule_id: 3, channels: [] }] } },
      'receiver.oncall.0.channels',
    ],
  ])('refuses %s', async (_name, patch, msg) => {
    // Arrange
    const { deps, published } = fakeDeps(task());
    const input = { ...signed(task(), now()), ctn: { host: 'a' }, ...patch };
    // Act
    const err = await reportAlarm(input, deps).catch((e) => e);
    // Assert
    expect(err).toBeInstanceOf(AlarmError);
    expect(err).toMatchObject({ status: 400, code: 4000 });
    expect(err.message).toContain(msg);
    expect(published).toHaveLength(0);
  });

  it('authenticates before it validates', async () => {
    const { deps } = fakeDeps(task());
    await expect(reportAlarm({ taskid: 100001, timestamp: now(), sign: 'x', ctn: [] }, deps)).rejects.toThrow(
      'signature invalid',
    );
  });
});

describe('report acceptance', () => {
  it('carries an override that names a schedule, one entry per schedule', async () => {
    const { deps, published } = fakeDeps(task());
    const oncall = [
      { schedule_id: 2, channels: ['email'] },
      { schedule_id: 2, channels: ['sms'] },
    ];
    await reportAlarm({ ...signed(task(), now()), ctn: { host: 'web-1' }, receiver: { oncall } }, deps);
    expect(published[0].receiver).toEqual({ oncall: [{ schedule_id: 2, channels: ['email', 'sms'] }] });
  });

  it('queues the alarm with defaults and answers uuid and report_time', async () => {
    // Arrange
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.UTC(2024, 1, 29, 23, 59, 58));
    const { deps, published } = fakeDeps(task());
    // Act
    const answer = await reportAlarm({ ...signed(task(), now()), ctn: { host: 'web-1' } }, deps);
    // Assert
    expect(answer.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(answer.report_time).toBe('2024-02-29 23:59:58');
    expect(published).toEqual([
      {
        kind: 'alarm',
        uuid: answer.uuid,
        task_id: 100001,
        level: 0,
        ctn: { host: 'web-1' },
        notice_time: now(),
        reported_at: now(),
        reported_ms: Date.UTC(2024, 1, 29, 23, 59, 58),
      },
    ]);
  });

  it('keeps level, notice_time and a normalised receiver override', async () => {
    const { deps, published } = fakeDeps(task());
    await reportAlarm(
      {
        ...signed(task(), now()),
        ctn: { a: 1 },
        level: 3,
        notice_time: 1700000000,
        receiver: {
          alarmgroup: [1, 2],
          channels: {
            sms: [4, 4],
            email: [],
            webhook: { url: 'https://x.example/h' },
            dinggroup: [{ webhook: 'tok' }],
          },
          dispatch: [{ conditions: [], receiver: {} }],
        },
      },
      deps,
    );
    expect(published[0]).toMatchObject({ level: 3, notice_time: 1700000000 });
    // The robot travels sealed on the queue (opened only where it is called).
    const sent = published[0].receiver as ReceiverConfig;
    expect(isSealed(sent.channels?.dinggroup?.[0].webhook ?? '')).toBe(true);
    expect(openReceiverRobots(sent)).toEqual({
      alarmgroup: [1, 2],
      channels: { sms: [4], webhook: 'https://x.example/h', dinggroup: [{ webhook: 'tok' }] },
    });
  });

  it.each([
    ['stopped', { status: 0 as const }, 409, 4001, 'task was stopped'],
    ['paused', { status: 2 as const, paused_until: 4102444800 }, 409, 4002, 'task was paused'],
  ])('refuses a %s task', async (_name, patch, status, code, msg) => {
    const { deps, published } = fakeDeps(task(patch));
    const err = await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 } }, deps).catch((e) => e);
    expect(err).toMatchObject({ status, code, message: msg });
    expect(published).toHaveLength(0);
  });

  it('accepts alarms of a task whose pause has passed', async () => {
    const { deps, published } = fakeDeps(task({ status: 2, paused_until: now() - 1 }));
    await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 } }, deps);
    expect(published).toHaveLength(1);
  });

  it('applies the deployment rate limit, then the task rate limit', async () => {
    // Arrange: ALARM_RATE_LIMIT=3, a frozen limiter clock
    const { deps, published } = fakeDeps(task());
    const input = { ...signed(task(), now()), ctn: { a: 1 } };
    // Act
    for (let i = 0; i < 3; i++) await reportAlarm(input, deps);
    const err = await reportAlarm(input, deps).catch((e) => e);
    // Assert
    expect(published).toHaveLength(3);
    expect(err).toMatchObject({
      status: 429,
      code: 4010,
      message: 'task [100001] reached its rate limit of 3 alarms per second',
      headers: { 'retry-after': '1' },
    });

    const own = fakeDeps(task({ rate_limit: 1 }));
    await reportAlarm(input, own.deps);
    await expect(reportAlarm(input, own.deps)).rejects.toThrow('rate limit of 1 alarms per second');
  });

  it('does not count refused alarms against the rate limit', async () => {
    const { deps } = fakeDeps(task({ rate_limit: 1 }));
    const input = { ...signed(task(), now()), ctn: { a: 1 } };
    await expect(reportAlarm({ ...input, level: 9 }, deps)).rejects.toThrow('level');
    await expect(reportAlarm(input, deps)).resolves.toHaveProperty('uuid');
  });

  it('fails, leaving the receipt unqueued, when the alarm cannot be queued', async () => {
    const { deps, receipts } = fakeDeps(task(), {
      publishAlarm: async () => {
        throw new Error('queue down');
      },
    });
    const uuid = '7b0f6c1e-1d1a-4c59-8a52-2b7f5f3b9a10';
    await expect(reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, uuid }, deps)).rejects.toThrow(
      'queue down',
    );
    expect([...receipts.values()].map((r) => r.queued)).toEqual([false]);
  });

  it('refuses an alarm too large for one queue message with 413', async () => {
    const { deps } = fakeDeps(task());
    const err = await reportAlarm(
      { ...signed(task(), now()), ctn: { a: 'x'.repeat(1_048_576) } },
      deps,
    ).catch((e) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
  });
});

describe('idempotent reports with a client uuid', () => {
  const uuid = '7B0F6C1E-1D1A-4C59-8A52-2B7F5F3B9A10';

  it('answers a repeat with the first answer and queues once', async () => {
    // Arrange
    const { deps, published } = fakeDeps(task());
    const input = { ...signed(task(), now()), ctn: { a: 1 }, uuid };
    // Act
    const first = await reportAlarm(input, deps);
    const second = await reportAlarm(input, deps);
    // Assert
    expect(first.uuid).toBe(uuid.toLowerCase());
    expect(second).toEqual(first);
    expect(published).toHaveLength(1);
    expect(published[0].uuid).toBe(uuid.toLowerCase());
  });

  it('answers a repeat even when the task was stopped since, without spending the rate limit', async () => {
    const { deps } = fakeDeps(task({ rate_limit: 1 }));
    const input = { ...signed(task(), now()), ctn: { a: 1 }, uuid };
    const first = await reportAlarm(input, deps);
    const stopped = { ...deps, getTask: async () => task({ status: 0 }) };
    await expect(reportAlarm(input, stopped)).resolves.toEqual(first);
  });

  it('answers the winner when a concurrent report with the same uuid was recorded first', async () => {
    const winner: ReportReceipt = {
      uuid: uuid.toLowerCase(),
      task_id: 100001,
      report_time: '2020-01-01 00:00:00',
      ttl: 1,
      queued: false,
    };
    const { deps, published } = fakeDeps(task(), {
      getReceipt: async () => undefined,
      putReceipt: async () => winner,
    });
    const answer = await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, uuid }, deps);
    expect(answer).toEqual({ uuid: winner.uuid, report_time: winner.report_time });
    expect(published).toHaveLength(1);
  });

  it("refuses another task's uuid", async () => {
    const { deps, receipts, published } = fakeDeps(task());
    receipts.set(uuid.toLowerCase(), {
      uuid: uuid.toLowerCase(),
      task_id: 5,
      report_time: 'x',
      ttl: 1,
      queued: true,
    });
    const err = await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, uuid }, deps).catch((e) => e);
    expect(err).toMatchObject({ code: 4000, message: 'uuid was already used by another task' });
    expect(published).toHaveLength(0);
  });

  it('queues nothing when another task claims the uuid first in a race', async () => {
    // Arrange: the uuid is free when read, taken by task 5 when this report tries to claim it
    const rival: ReportReceipt = {
      uuid: uuid.toLowerCase(),
      task_id: 5,
      report_time: 'x',
      ttl: 1,
      queued: false,
    };
    const { deps, published } = fakeDeps(task(), {
      getReceipt: async () => undefined,
      putReceipt: async () => rival,
    });
    // Act
    const err = await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, uuid }, deps).catch((e) => e);
    // Assert
    expect(err).toMatchObject({ code: 4000 });
    expect(published).toHaveLength(0);
  });

  it('answers a concurrent repeat once the first request has queued it, without queueing it again', async () => {
    // Arrange: the first request holds the receipt, still unqueued when the repeat reads it
    const { deps, published, receipts } = fakeDeps(task());
    const input = { ...signed(task(), now()), ctn: { a: 1 }, uuid };
    const pending: ReportReceipt = {
      uuid: uuid.toLowerCase(),
      task_id: 100001,
      report_time: 'first',
      ttl: 1,
      queued: false,
    };
    receipts.set(pending.uuid, pending);
    const concurrent = {
      ...deps,
      queuedSoon: async (u: string) => {
        receipts.set(u, { ...pending, queued: true });
        return true;
      },
    };
    // Act
    const answer = await reportAlarm(input, concurrent);
    // Assert
    expect(answer).toEqual({ uuid: pending.uuid, report_time: 'first' });
    expect(published).toHaveLength(0);
  });

  it('queues a repeat whose first queueing failed, with the first answer', async () => {
    // Arrange: the queue refuses the first report
    const { deps, published, receipts } = fakeDeps(task());
    const input = { ...signed(task(), now()), ctn: { a: 1 }, uuid };
    const down = {
      ...deps,
      publishAlarm: async () => {
        throw new Error('queue unavailable');
      },
    };
    await expect(reportAlarm(input, down)).rejects.toThrow('queue unavailable');
    const pending = receipts.get(uuid.toLowerCase());
    // Act
    const retry = await reportAlarm(input, deps);
    // Assert
    expect(pending?.queued).toBe(false);
    expect(retry).toEqual({ uuid: pending?.uuid, report_time: pending?.report_time });
    expect(published).toHaveLength(1);
    expect(receipts.get(uuid.toLowerCase())?.queued).toBe(true);
  });
});

describe('what the alarm SDKs send (API guide §7.1)', () => {
  it.each([
    ['{}', {}],
    ['{channels: {}}', { channels: {} }],
    ['PHP new Receiver() {alarmgroup: [], channels: []}', { alarmgroup: [], channels: [] }],
    ['empty channel lists', { channels: { sms: [], dinggroup: [] } }],
    ['Go empty webhook list', { channels: { webhook: [] } }],
  ])('a receiver that names nobody (%s) means no override', async (_name, receiver) => {
    // Arrange
    const { deps, published } = fakeDeps(task());
    // Act
    await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, receiver }, deps);
    // Assert
    expect(published).toHaveLength(1);
    expect(published[0]).not.toHaveProperty('receiver');
  });

  it('refuses an override naming a blocked URL with 4000 and queues nothing', async () => {
    const { deps, published } = fakeDeps(task());
    const receiver = { channels: { dinggroup: [{ webhook: 'http://127.0.0.1:9/robot' }] } };
    const err = await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, receiver }, deps).catch(
      (e) => e,
    );
    expect(err).toMatchObject({
      code: 4000,
      message: 'receiver.channels.dinggroup.0.webhook must not point to a private or reserved address',
    });
    expect(published).toHaveLength(0);
  });

  it('takes the PHP form with alarm groups and no channels as an override', async () => {
    const { deps, published } = fakeDeps(task());
    await reportAlarm(
      { ...signed(task(), now()), ctn: { a: 1 }, receiver: { alarmgroup: [1, 2], channels: [] } },
      deps,
    );
    expect(published[0].receiver).toEqual({ alarmgroup: [1, 2] });
  });

  it("takes the Go SDK's webhook list", async () => {
    const { deps, published } = fakeDeps(task());
    const receiver = { channels: { webhook: ['https://example.com/hook'], email: [7] } };
    await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, receiver }, deps);
    expect(published[0].receiver).toEqual({ channels: { webhook: 'https://example.com/hook', email: [7] } });
  });

  it('takes notice_time as a numeric string (Java SDK)', async () => {
    const { deps, published } = fakeDeps(task());
    await reportAlarm({ ...signed(task(), now()), ctn: { a: 1 }, notice_time: '1700000000' }, deps);
    expect(published[0].notice_time).toBe(1700000000);
  });

  it.each([
    [25 * 60, true],
    [-25 * 60, true],
    [31 * 60, false],
  ])('with a timestamp %i s off accepts it: %s (the 1800 s alarm window)', async (offset, ok) => {
    const { deps } = fakeDeps(task());
    const input = { ...signed(task(), now() + offset), ctn: { a: 1 } };
    const res = await reportAlarm(input, deps).catch((e) => e);
    if (ok) expect(res).toHaveProperty('uuid');
    else expect(res).toMatchObject({ code: 401, message: 'signature was expired' });
  });

  it('refuses ctn nested deeper than 64 levels with 4000', async () => {
    let ctn: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 64; i++) ctn = { n: ctn };
    const { deps, published } = fakeDeps(task());
    const err = await reportAlarm({ ...signed(task(), now()), ctn }, deps).catch((e) => e);
    expect(err).toMatchObject({ code: 4000, message: 'ctn must not be nested deeper than 64 levels' });
    expect(published).toHaveLength(0);
  });
});

describe('formatDateTime (report_time)', () => {
  it.each([
    [0, 'UTC', '1970-01-01 00:00:00'],
    [1582650647, 'UTC', '2020-02-25 17:10:47'],
    [1582650647, 'Asia/Shanghai', '2020-02-26 01:10:47'],
    [1582650647, 'America/New_York', '2020-02-25 12:10:47'],
  ])('formats %i in %s', (seconds, tz, expected) => {
    expect(formatDateTime(seconds, tz)).toBe(expected);
  });
});
