import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { WebhookMessage } from '../../shared/contracts/messages.ts';
import { event } from '../../shared/domain/events/payloads.ts';
import { publishWebhookEvents } from '../../shared/domain/events/publish.ts';
import {
  listAttemptsOfEvent,
  listRecentAttemptsOfTask,
  type WebhookAttempt,
} from '../../shared/domain/webhooks/repository.ts';
import { verifyWebhookSignature } from '../../shared/domain/webhooks/signature.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { call, serviceNow } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { eachOnce, UNDER_CHAOS } from '../support/chaos.ts';

/**
 * Outbound webhook delivery (API guide §12.1, §12.5) through the real webhook queue, consumer and
 * table, to real HTTP servers on 127.0.0.1. Retry backoffs are 1 s in the test stack.
 */
let receiver: TestReceiver;
let task: CreatedTask;

/** Answers PINGs at once; everything else per `rest`. */
function behaviour(rest: (r: Received) => { status?: number; delayMs?: number }) {
  return (r: Received) => (r.json?.event === 'PING' ? { status: 200 } : rest(r));
}

beforeAll(async () => {
  receiver = await new TestReceiver().start();
  task = await createTask({
    receiver: { channels: { email: [1], webhook: `${receiver.url}/hook?token=abc` } },
  });
  await receiver.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
});

afterAll(async () => {
  await receiver.stop();
});

/** Publishes one ALARM-like event for the task and returns its event id. */
async function send(taskId = task.id): Promise<string> {
  const eventId = `test-${randomUUID()}`;
  await publishWebhookEvents(taskId, [
    { eventId, body: event('ALARM', 'compress_disable', { task: { id: taskId, name: 'x' }, n: eventId }) },
  ]);
  return eventId;
}

const requestsOf = (eventId: string) => receiver.received.filter((r) => r.headers['webhook-id'] === eventId);

/** Polls the attempt records of an event until `done` holds. */
async function attemptsUntil(
  eventId: string,
  done: (a: WebhookAttempt[]) => boolean,
  taskId = task.id,
  timeoutMs = 20_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const attempts = await listAttemptsOfEvent(eventId, await anyTime(taskId));
    if (done(attempts)) return attempts;
    if (Date.now() > deadline) throw new Error(`attempts of ${eventId}: ${JSON.stringify(attempts)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Search the task's whole delivery log up to the service's now (other suites may have moved the
 * service clock ahead of this process's clock by days).
 */
const anyTime = async (taskId: number) => ({ taskId, fromMs: 0, toMs: (await serviceNow()) * 1000 + 60_000 });

const delivered = (a: WebhookAttempt[]) => a.some((x) => x.outcome === 'delivered');

describe('webhook delivery', () => {
  it('sends a PING on task creation with the contract headers and a verifiable signature', async () => {
    // Arrange / Act: the task was created with a webhook in beforeAll
    const [ping] = receiver.events('PING');
    // Assert
    expect(ping.method).toBe('POST');
    expect(ping.path).toBe('/hook?token=abc');
    expect(ping.json).toEqual({ event: 'PING', type: 'ping', data: {}, extra: {} });
    expect(ping.headers['content-type']).toBe('application/json');
    expect(ping.headers['user-agent']).toMatch(/(^|\s)svc\/\d+\.\d+\.\d+/);
    const id = String(ping.headers['webhook-id']);
    const ts = String(ping.headers['webhook-timestamp']);
    expect(ts).toMatch(/^\d{10}$/);
    expect(
      verifyWebhookSignature(task.secret, id, ts, ping.body, String(ping.headers['webhook-signature'])),
    ).toBe(true);
    expect(
      verifyWebhookSignature(task.token, id, ts, ping.body, String(ping.headers['webhook-signature'])),
    ).toBe(false);
    // (each attempt once: under the chaos queue a copy of the PING may deliver it again)
    const attempts = eachOnce(await attemptsUntil(id, delivered), (a) => [a.attempt, a.outcome]);
    expect(attempts).toEqual([
      expect.objectContaining({
        event_id: id,
        task_id: task.id,
        attempt: 1,
        outcome: 'delivered',
        status: 200,
      }),
    ]);
    expect(attempts[0].target).toBe(receiver.url);
    const recent = await listRecentAttemptsOfTask(task.id, 50, (await serviceNow()) * 1000 + 60_000);
    expect(recent.map((a) => a.event_id)).toContain(id);
  });

  it('retries a failing receiver with the same webhook-id and body until it answers 200', async () => {
    // Arrange: two 500s, then 200
    let calls = 0;
    receiver.behaviour = behaviour(() => (++calls <= 2 ? { status: 500 } : { status: 200 }));
    // Act
    const id = await send();
    const attempts = await attemptsUntil(id, delivered);
    // Assert
    const reqs = requestsOf(id);
    if (UNDER_CHAOS) {
      // A copy of a message may make an attempt of the same number (and use one of the 500s).
      expect(attempts.filter((a) => a.outcome !== 'delivered').every((a) => a.status === 500)).toBe(true);
      expect(attempts).toContainEqual(expect.objectContaining({ outcome: 'delivered', status: 200 }));
      expect(reqs.length).toBeGreaterThanOrEqual(3);
    } else {
      expect(attempts.map((a) => [a.attempt, a.outcome, a.status])).toEqual([
        [1, 'failed', 500],
        [2, 'failed', 500],
        [3, 'delivered', 200],
      ]);
      expect(reqs).toHaveLength(3);
    }
    expect(new Set(reqs.map((r) => r.body)).size).toBe(1);
    for (const r of reqs) {
      const ok = verifyWebhookSignature(
        task.secret,
        id,
        String(r.headers['webhook-timestamp']),
        r.body,
        String(r.headers['webhook-signature']),
      );
      expect(ok).toBe(true);
    }
  });

  it('treats a receiver slower than 200 ms as failed and delivers once it is fast', async () => {
    // Arrange: 300 ms on the first call
    let calls = 0;
    receiver.behaviour = behaviour(() => (++calls === 1 ? { status: 200, delayMs: 300 } : { status: 200 }));
    // Act
    const id = await send();
    const attempts = await attemptsUntil(id, delivered);
    // Assert
    expect(attempts[0]).toMatchObject({ attempt: 1, outcome: 'failed', error: 'timeout after 200 ms' });
    expect(attempts.at(-1)).toMatchObject({ outcome: 'delivered', status: 200 });
    expect(requestsOf(id).length).toBe(attempts.length);
  });

  it('delivers to a receiver that was down once it is back up', async () => {
    // Arrange
    receiver.behaviour = { status: 200 };
    await receiver.stop();
    // Act
    const id = await send();
    await attemptsUntil(id, (a) => a.length >= 1);
    await receiver.restart();
    const attempts = await attemptsUntil(id, delivered);
    // Assert
    expect(attempts[0]).toMatchObject({ attempt: 1, outcome: 'failed', error: 'ECONNREFUSED' });
    expect(attempts.at(-1)).toMatchObject({ outcome: 'delivered' });
    // Once (at least once: a second copy of its message may get there too, with the same webhook-id)
    expect(requestsOf(id).length).toBeGreaterThanOrEqual(1);
    expect(new Set(requestsOf(id).map((r) => r.body)).size).toBe(1);
  });

  it("retries a reported alarm's event whose first attempt failed, with the same webhook-id and body", async () => {
    // Arrange: a task of its own (the pipeline makes the first attempt; its failure cools the task off
    // in the pipeline's container)
    const own = await new TestReceiver().start();
    let alarms = 0;
    own.behaviour = behaviour(() => (++alarms === 1 ? { status: 503 } : { status: 200 }));
    try {
      const t = await createTask({ receiver: { channels: { webhook: own.url } } });
      await own.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
      // Act: one alarm through POST /alarm/report
      const timestamp = await serviceNow();
      const res = await call('POST', '/alarm/report', {
        app: null,
        json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn: { host: 'db-1' } },
      });
      expect(res.code).toBe(0);
      const eventId = `${t.id}:${res.data.uuid}:ALARM`;
      const attempts = await attemptsUntil(eventId, delivered, t.id);
      // Assert: attempt 1 failed (made by the pipeline), attempt 2 from the queue after the backoff
      expect(attempts.map((a) => [a.attempt, a.outcome, a.status])).toEqual([
        [1, 'failed', 503],
        [2, 'delivered', 200],
      ]);
      const reqs = own.received.filter((r) => r.headers['webhook-id'] === eventId);
      expect(reqs).toHaveLength(2);
      expect(new Set(reqs.map((r) => r.body)).size).toBe(1);
      expect(reqs[0].json).toMatchObject({ event: 'ALARM', data: { history: { uuid: res.data.uuid } } });
    } finally {
      await own.stop();
    }
  });

  it('records a skipped attempt for a deleted task and for a task without webhook, and sends nothing', async () => {
    // Arrange
    const noHook = await createTask();
    // Act
    const goneId = 987_000_000 + Math.floor(Math.random() * 1000);
    const [gone, none] = await Promise.all([send(goneId), send(noHook.id)]);
    const [a, b] = await Promise.all([
      attemptsUntil(gone, (x) => x.length > 0, goneId),
      attemptsUntil(none, (x) => x.length > 0, noHook.id),
    ]);
    // Assert: skipped (at least once: a second copy of the message records its attempt too)
    expect(a.length).toBeGreaterThanOrEqual(1);
    expect(b.length).toBeGreaterThanOrEqual(1);
    for (const x of a) expect(x).toMatchObject({ attempt: 1, outcome: 'skipped', error: 'task not found' });
    for (const x of b)
      expect(x).toMatchObject({ attempt: 1, outcome: 'skipped', error: 'task has no webhook' });
  });
});

describe('webhook dead-letter queue', () => {
  it('moves an event that fails 7 times to the webhook DLQ itself, with every attempt recorded', async () => {
    // Arrange: a receiver that always fails
    const failing = await new TestReceiver().start();
    failing.behaviour = behaviour(() => ({ status: 503 }));
    const sqs = new SQSClient({
      endpoint: inject('stack').sqsEndpoint,
      region: inject('stack').region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      const t = await createTask({ receiver: { channels: { webhook: failing.url } } });
      await failing.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
      // Act
      const eventId = `test-${randomUUID()}`;
      await publishWebhookEvents(t.id, [{ eventId, body: event('ALARM', 'compress_disable', { n: 1 }) }]);
      // (Under the chaos queue a message may be delivered twice and its attempt recorded twice: the
      // attempts are told by number.)
      const byNumber = (list: WebhookAttempt[]) => [...new Map(list.map((a) => [a.attempt, a])).values()];
      const attempts = byNumber(await attemptsUntil(eventId, (a) => byNumber(a).length >= 7, 40_000)).sort(
        (x, y) => x.attempt - y.attempt,
      );
      let dead: WebhookMessage | undefined;
      const deadline = Date.now() + 20_000;
      while (!dead && Date.now() < deadline) {
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: inject('stack').dlqUrls.webhook,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            VisibilityTimeout: 0,
          }),
        );
        for (const m of out.Messages ?? []) {
          const body = JSON.parse(m.Body ?? '{}') as WebhookMessage;
          if (body.event_id === eventId) {
            dead = body;
            await sqs.send(
              new DeleteMessageCommand({
                QueueUrl: inject('stack').dlqUrls.webhook,
                ReceiptHandle: m.ReceiptHandle,
              }),
            );
          }
        }
      }
      // Assert
      expect(dead).toMatchObject({
        kind: 'webhook',
        event_id: eventId,
        task_id: t.id,
        body: { event: 'ALARM' },
      });
      expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(attempts.every((a) => a.outcome === 'failed')).toBe(true);
      // Sent, or held by the task's circuit once its receiver failed five times in a row (the test's
      // backoff of 1 s comes before the circuit's next probe is due); the last one is always sent
      const sent = attempts.filter((a) => a.status === 503);
      const held = attempts.filter((a) => a.error?.startsWith('circuit open'));
      expect(sent.length + held.length).toBe(7);
      expect(sent.length).toBeGreaterThanOrEqual(3);
      expect(attempts[6].status).toBe(503);
      const received = failing.received.filter((r) => r.headers['webhook-id'] === eventId).length;
      const recorded = await listAttemptsOfEvent(eventId, await anyTime(task.id));
      if (UNDER_CHAOS) {
        expect(received).toBeGreaterThanOrEqual(sent.length);
        expect(byNumber(recorded)).toHaveLength(7);
      } else {
        expect(received).toBe(sent.length);
        expect(recorded).toHaveLength(7);
      }
    } finally {
      sqs.destroy();
      await failing.stop();
    }
  });
});
