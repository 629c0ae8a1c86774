import { GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { queues } from '../../infra/consumers.ts';
import { chaosFromEnv, type ChaosOptions, DEFAULT_CHAOS } from '../../shared/local/chaos.ts';
import { type LocalQueues, localSqsClient, startQueues } from '../../shared/local/queues.ts';
import { startPoller } from '../../shared/local/poller.ts';
import { batches } from '../fixtures/batch-consumer.ts';
import { seen } from '../fixtures/failing-consumer.ts';

/**
 * The local queue at its worst (SQS_CHAOS=1, shared/local/chaos.ts) over a real emulator: the local
 * event source with the chaos layer reorders within and across batches, delivers some messages twice,
 * and refuses to receive past its in-flight limit. Its seed is fixed here, so each run makes the same
 * choices.
 */
const REGION = 'us-east-1';
const open: { q: LocalQueues; client: SQSClient; stop: () => Promise<void> }[] = [];

afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.stop();
    o.client.destroy();
    await o.q.stop();
  }
});

async function sendAll(client: SQSClient, url: string, bodies: string[]) {
  for (let i = 0; i < bodies.length; i += 10) {
    await client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b })),
      }),
    );
  }
}

async function counts(client: SQSClient, url: string) {
  const a =
    (
      await client.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      )
    ).Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible),
  };
}

async function until(check: () => Promise<boolean> | boolean, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function poller(consumer: string, chaos: ChaosOptions) {
  const q = await startQueues(0, REGION, null);
  const client = localSqsClient(q.endpoint, REGION);
  const def = queues.find((d) => d.name === 'alarm')!;
  const p = startPoller(
    client,
    { ...def, consumer, batchSize: 10, gather: false },
    q.urls.alarm,
    REGION,
    { min: 2, max: 2, windowMs: 0 },
    { options: chaos, client },
  );
  open.push({ q, client, stop: () => p.stop() });
  return { url: q.urls.alarm, client, p };
}

describe('the chaos queue (SQS_CHAOS=1)', () => {
  it('is off unless asked for, and takes its seed and in-flight limit from the environment', () => {
    expect(chaosFromEnv({})).toBeUndefined();
    expect(chaosFromEnv({ SQS_CHAOS: '0' })).toBeUndefined();
    expect(chaosFromEnv({ SQS_CHAOS: '1', SQS_CHAOS_SEED: '42', SQS_CHAOS_IN_FLIGHT: '300' })).toEqual({
      ...DEFAULT_CHAOS,
      seed: 42,
      inFlightLimit: 300,
    });
    expect(() => chaosFromEnv({ SQS_CHAOS: '1', SQS_CHAOS_IN_FLIGHT: 'lots' })).toThrow(
      /SQS_CHAOS_IN_FLIGHT/,
    );
  });

  it('reorders within and across batches and delivers some messages again, losing none', async () => {
    // Arrange
    batches.length = 0;
    const bodies = Array.from({ length: 200 }, (_, i) => `m${String(i).padStart(3, '0')}`);
    const { url, client, p } = await poller('test/fixtures/batch-consumer.ts', { ...DEFAULT_CHAOS, seed: 7 });
    // Act
    await sendAll(client, url, bodies);
    await until(async () => {
      const c = await counts(client, url);
      return new Set(batches.flat()).size === bodies.length && c.visible === 0 && c.inFlight === 0;
    });
    // Assert: every message processed, some twice
    const order = batches.flat();
    expect(new Set(order)).toEqual(new Set(bodies));
    expect(order.length).toBeGreaterThan(bodies.length);
    expect(p.chaos?.duplicated).toBeGreaterThan(0);
    expect(p.chaos?.redelivered).toBeGreaterThan(0);
    // Assert: within a batch out of order, and a message held back past later ones
    expect(batches.some((b) => b.some((m, i) => i > 0 && m < b[i - 1]))).toBe(true);
    expect(p.chaos?.heldBack).toBeGreaterThan(0);
    const firstSeen = [...new Set(order)];
    const late = firstSeen.filter((m, i) => firstSeen.slice(i + 1).some((later) => later < m)).length;
    expect(late).toBeGreaterThan(10);
  });

  it('refuses to receive past its in-flight limit, as SQS does past 120,000', async () => {
    // Arrange: a consumer that fails everything keeps its messages in flight (the visibility timeout)
    seen.length = 0;
    const limit = 25;
    const { url, client, p } = await poller('test/fixtures/failing-consumer.ts', {
      ...DEFAULT_CHAOS,
      seed: 11,
      inFlightLimit: limit,
    });
    // Act
    await sendAll(
      client,
      url,
      Array.from({ length: 100 }, (_, i) => `n${i}`),
    );
    await until(() => (p.chaos?.overLimit ?? 0) >= 3);
    // Assert: the receives stopped at the limit (give or take a batch); the rest wait, visible
    const c = await counts(client, url);
    expect(c.inFlight).toBeGreaterThanOrEqual(limit);
    expect(c.inFlight).toBeLessThan(limit + 2 * 10 + 1);
    expect(c.visible).toBeGreaterThan(50);
    expect(new Set(seen).size).toBeLessThan(limit + 2 * 10 + 1);
  });
});
