import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getItems, queryAll, unpackLog } from '../../shared/db/client.ts';
import { keys, webhookLogDayOf } from '../../shared/db/keys.ts';
import type { AlarmRecord } from '../../shared/domain/alarms/model.ts';
import { reportAlarm } from '../../shared/domain/alarms/report.ts';
import { alarmRecordOf } from '../../shared/domain/alarms/repository.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { type LocalStack, startLocalStack } from '../../shared/local/stack.ts';
import type { Stats } from '../../shared/local/stats.ts';
import { TestReceiver } from '../support/receiver.ts';
import { seedTestDirectory, TEST_APP } from '../support/seed.ts';

/**
 * A storm on one metric: 2,000 alarms of a task that compresses every alarm under one metric (full
 * method) and a strategy that moves the window state with every alarm (cycle-count), reported all at
 * once, consumed by 8 alarm consumers at once (the alarm queue's concurrency pinned, as an event
 * source's maximum concurrency pins it on AWS). Every batch commits to the same metric state, so
 * nearly every commit races seven others. Every alarm must be processed exactly once, nothing may be
 * dead-lettered, and no message may use up a receive (it would still be in flight at the end).
 *
 * The test runs a stack of its own (this worker's environment points at it): the shared test stack
 * scales its alarm consumer from 5 to 20, which would make the storm another one. TOCSIN_STORM_REPORT=1
 * prints what the storm cost (receives, metric reads and commits, calls per alarm).
 */
const ALARMS = 2_000;
const CONSUMERS = 8;
/** cycle-count: a window notifies its first and its N-th alarm, then closes. */
const N = 10;
/**
 * How long a consumer retries a lost metric commit before handing the alarms back to the queue: far
 * below the default (20 s) so that the storm outlasts it and the handback path is taken again and
 * again, not only the retries.
 */
const CONTENTION_MS = 250;

let stack: LocalStack;
const receiver = new TestReceiver();

beforeAll(async () => {
  await receiver.start();
  stack = await startLocalStack({
    port: 0,
    dataDir: ':memory:',
    stateFile: false,
    schedule: false,
    concurrency: { alarm: CONSUMERS },
    env: {
      LOG_LEVEL: 'ERROR',
      ALARM_RATE_LIMIT: '100000',
      TOCSIN_STATS: '1',
      ALARM_CONTENTION_MS: String(CONTENTION_MS),
    },
  });
  await seedTestDirectory();
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await receiver.stop();
}, 60_000);

async function createStormTask(): Promise<{ id: number; token: string }> {
  const ts = Math.floor(Date.now() / 1000);
  const res = await fetch(`${stack.url}/alarmtask/store`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-app-id': String(TEST_APP.id),
      'x-app-timestamp': String(ts),
      'x-app-sign': hmacSign(TEST_APP.token, TEST_APP.id, ts),
    },
    body: JSON.stringify({
      name: `storm-${ts}`,
      created_by: 1,
      department_id: 1,
      flag_save_db: 1,
      receiver: { channels: { webhook: `${receiver.url}/hook` } },
      // Full method: one metric for the task; windows of 10 h never end during the test.
      compress: {
        enable: true,
        method: 4,
        strategy: 3,
        strategy_count: N,
        strategy_cycle: 600,
        not_match: 1,
      },
    }),
  });
  const body = (await res.json()) as {
    code: number;
    msg: string;
    data: { task: { id: number; token: string } };
  };
  if (body.code !== 0) throw new Error(`task create refused: ${body.code} ${body.msg}`);
  return body.data.task;
}

/**
 * Reports `ALARMS` alarms through the report route's own code (authentication, validation, rate
 * limit, durable queueing), all at once, in this process: the HTTP hop of the local API (one thread)
 * would trickle them in at the pace the consumers drain them, where on AWS the intake scales out and
 * the queue fills at once. Returns the accepted uuids.
 */
async function storm(task: { id: number; token: string }): Promise<string[]> {
  const ts = Math.floor(Date.now() / 1000);
  const sign = hmacSign(task.token, task.id, ts);
  const answers = await Promise.all(
    Array.from({ length: ALARMS }, (_, seq) =>
      reportAlarm({ taskid: task.id, timestamp: ts, sign, ctn: { host: `web-${seq % 20}`, seq } }),
    ),
  );
  return answers.map((a) => a.uuid);
}

async function queueCounts(client: SQSClient, url: string): Promise<number[]> {
  const out = await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  const a = out.Attributes ?? {};
  return [
    Number(a.ApproximateNumberOfMessages ?? 0),
    Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  ];
}

/** Waits until every queue is empty (nothing visible, in flight or delayed), or `timeoutMs`. */
async function drained(client: SQSClient, timeoutMs: number): Promise<Record<string, number[]>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts: Record<string, number[]> = {};
    for (const [name, url] of Object.entries(stack.queueUrls)) counts[name] = await queueCounts(client, url);
    const busy = Object.values(counts).some((c) => c.some((n) => n > 0));
    if (!busy || Date.now() > deadline) return counts;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The uuids of the task's alarm log (its history), one per logged entry. */
async function loggedUuids(taskId: number, fromMs: number, toMs: number): Promise<string[]> {
  const uuids: string[] = [];
  for (let day = webhookLogDayOf(fromMs); day <= webhookLogDayOf(toMs); day++) {
    const items = await queryAll({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.alarmLogDay(taskId, day) },
    });
    for (const item of items) uuids.push(...unpackLog<[string]>(item).map((row) => row[0]));
  }
  return uuids;
}

async function stats(): Promise<Stats> {
  return (await (await fetch(`${stack.url}/_local/stats`)).json()) as Stats;
}

describe('a storm on one metric', () => {
  it(`${ALARMS} alarms, ${CONSUMERS} consumers at once: each processed once, nothing dead-lettered`, async () => {
    // Arrange
    const task = await createStormTask();
    const sqs = new SQSClient({
      region: stack.region,
      endpoint: stack.sqsEndpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const startedMs = Date.now();
    await fetch(`${stack.url}/_local/stats?reset=1`);

    // Act
    const uuids = await storm(task);
    // Well within the alarm queue's visibility timeout (180 s): a message reported failed (a receive
    // used up) would still be in flight at the deadline.
    const queues = await drained(sqs, 120_000);
    const dlqs: Record<string, number[]> = {};
    for (const [name, url] of Object.entries(stack.dlqUrls)) dlqs[name] = await queueCounts(sqs, url);
    const drainedMs = Date.now();
    const cost = await stats();
    sqs.destroy();

    if (process.env.TOCSIN_STORM_REPORT === '1') {
      const received = cost.sqs.ReceiveMessageCommand?.messages ?? 0;
      const reads = cost.dynamodb['GetItem METRIC']?.calls ?? 0;
      const commits = cost.dynamodb['TransactWriteItems METRIC']?.calls ?? 0;
      const lost = cost.dynamodb['TransactWriteItems METRIC refused']?.calls ?? 0;
      const ddb = Object.values(cost.dynamodb).reduce((n, c) => n + c.calls, 0);
      const sqsCalls = Object.values(cost.sqs).reduce((n, c) => n + c.calls, 0);
      console.info(
        `storm: ${((drainedMs - startedMs) / 1000).toFixed(1)} s; alarm receives ${received} (${(received / ALARMS).toFixed(2)} per alarm); ` +
          `metric reads ${reads}, commits ${commits} (+${lost} lost); per alarm ${(ddb / ALARMS).toFixed(2)} DynamoDB, ${(sqsCalls / ALARMS).toFixed(2)} SQS calls; ` +
          `invocations ${JSON.stringify(cost.invocations)}\n${JSON.stringify(cost, null, 1)}`,
      );
    }

    // Assert: accepted, nothing left anywhere, nothing dead-lettered
    expect(new Set(uuids).size).toBe(ALARMS);
    expect(queues).toEqual({
      alarm: [0, 0, 0],
      webhook: [0, 0, 0],
      notify: [0, 0, 0],
      due: [0, 0, 0],
      replay: [0, 0, 0],
    });
    expect(dlqs).toEqual({
      alarm: [0, 0, 0],
      webhook: [0, 0, 0],
      notify: [0, 0, 0],
      due: [0, 0, 0],
      replay: [0, 0, 0],
    });

    // Assert: one record each; the metric's windows took every alarm once, in order
    const records = (
      await getItems(
        uuids.map((u) => keys.alarm(task.id, u)),
        { consistent: true },
      )
    ).map((item) => alarmRecordOf(item) as AlarmRecord);
    expect(records).toHaveLength(ALARMS);
    expect(new Set(records.map((r) => r.history.id)).size).toBe(ALARMS);
    expect(new Set(records.map((r) => r.history.metric)).size).toBe(1);
    const windows = new Map<number, number[]>();
    for (const r of records)
      windows.set(r.history.batch as number, [
        ...(windows.get(r.history.batch as number) ?? []),
        r.k as number,
      ]);
    const sizes = [...windows.values()].map((ks) => ks.length).sort((a, b) => a - b);
    expect(sizes).toEqual([...Array(ALARMS / N)].map(() => N));
    for (const ks of windows.values())
      expect(ks.sort((a, b) => a - b)).toEqual([...Array(N).keys()].map((k) => k + 1));
    const notified = records.filter((r) => r.notify === 'now').map((r) => r.uuid);
    expect(notified).toHaveLength((ALARMS / N) * 2);
    expect(records.filter((r) => r.notify === 'now').every((r) => r.k === 1 || r.k === N)).toBe(true);

    // Assert: the history has every alarm (a redelivered message may log its alarm again; the
    // listings show it once); the webhook had every notified alarm's event
    const logged = await loggedUuids(task.id, startedMs, Date.now());
    expect(logged.length).toBeGreaterThanOrEqual(ALARMS);
    expect(new Set(logged)).toEqual(new Set(uuids));
    const events = receiver.received.filter((r) => r.json?.event === 'ALARM');
    expect(new Set(events.map((e) => e.json.data.history.uuid as string))).toEqual(new Set(notified));
  }, 240_000);
});
