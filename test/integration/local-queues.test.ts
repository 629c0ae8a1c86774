import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { queues } from '../../infra/consumers.ts';
import {
  type LocalQueues,
  localSqsClient,
  MAX_MESSAGE_BYTES,
  startQueues,
} from '../../shared/local/queues.ts';
import { startPoller } from '../../shared/local/poller.ts';
import { batches } from '../fixtures/batch-consumer.ts';

/**
 * The local SQS emulator (fauxqs) as the stack runs it: durable in a data directory, restarted on a
 * new port, with the queue attributes of the CDK stack. Real fauxqs servers in this process.
 */
const REGION = 'us-east-1';
const open: { q: LocalQueues; client: SQSClient }[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const { q, client } of open.splice(0)) {
    client.destroy();
    await q.stop();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(dataDir: string | null, opts: { release?: boolean } = {}) {
  const q = await startQueues(0, REGION, dataDir, opts);
  const client = localSqsClient(q.endpoint, REGION);
  open.push({ q, client });
  return { q, client };
}

async function stop(q: LocalQueues) {
  const i = open.findIndex((o) => o.q === q);
  const [{ client }] = open.splice(i, 1);
  client.destroy();
  await q.stop();
}

const send = (client: SQSClient, url: string, body: string) =>
  client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));

async function receive(client: SQSClient, url: string, max = 10): Promise<Message[]> {
  const out = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: max,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return out.Messages ?? [];
}

const makeVisible = (client: SQSClient, url: string, m: Message) =>
  client.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: url,
      ReceiptHandle: m.ReceiptHandle,
      VisibilityTimeout: 0,
    }),
  );

async function attributes(client: SQSClient, url: string) {
  return (
    (await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] })))
      .Attributes ?? {}
  );
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tocsin-sqs-'));
  dirs.push(d);
  return d;
}

describe('local queues', () => {
  it('keep queues and messages in the data directory and reuse them after a restart on another port', async () => {
    // Arrange: three messages, one of them held in flight when the emulator stops, one made visible again
    const dir = tempDir();
    const first = await start(dir);
    for (const body of ['a', 'b', 'c']) await send(first.client, first.q.urls.alarm, body);
    const [held] = await receive(first.client, first.q.urls.alarm, 1);
    const [returned] = await receive(first.client, first.q.urls.alarm, 1);
    await makeVisible(first.client, first.q.urls.alarm, returned);
    await stop(first.q);

    // Act
    const second = await start(dir);
    const got: Message[] = [];
    for (let i = 0; i < 5 && got.length < 3; i++)
      got.push(...(await receive(second.client, second.q.urls.alarm)));

    // Assert
    const port = new URL(second.q.endpoint).port;
    expect(second.q.urls.alarm).toContain(`:${port}/`);
    expect(second.q.released).toBe(1);
    expect(got.map((m) => m.Body).sort()).toEqual(['a', 'b', 'c']);
    const count = (body: string | undefined) =>
      got.find((m) => m.Body === body)?.Attributes?.ApproximateReceiveCount;
    expect(count(held.Body)).toBe('2');
    expect(count(returned.Body)).toBe('2');
  });

  it('after an unclean end release what a receive held but keep a longer backoff; after a clean one nothing', async () => {
    // Arrange: one message held as a receive holds it, one hidden for an hour (a retry's backoff)
    const dir = tempDir();
    const first = await start(dir);
    for (const body of ['held', 'backoff']) await send(first.client, first.q.urls.alarm, body);
    const held = await receive(first.client, first.q.urls.alarm, 2);
    await first.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: first.q.urls.alarm,
        ReceiptHandle: held.find((m) => m.Body === 'backoff')?.ReceiptHandle,
        VisibilityTimeout: 3600,
      }),
    );
    await stop(first.q);

    // Act: a start after an unclean end, then one after a clean one
    const unclean = await start(dir, { release: true });
    const afterUnclean = await receive(unclean.client, unclean.q.urls.alarm);
    await stop(unclean.q);
    const clean = await start(dir, { release: false });
    const afterClean = await receive(clean.client, clean.q.urls.alarm);

    // Assert
    expect(held).toHaveLength(2);
    expect(unclean.q.released).toBe(1);
    expect(afterUnclean.map((m) => m.Body)).toEqual(['held']);
    expect(clean.q.released).toBe(0);
    expect(afterClean).toEqual([]);
  });

  it('give every queue the CDK attributes: 1 MiB messages, visibility timeout, redrive to its DLQ', async () => {
    // Arrange
    const { q, client } = await start(tempDir());

    // Act
    const attrs = await Promise.all(
      queues.map(async (def) => ({
        def,
        main: await attributes(client, q.urls[def.name]),
        dlq: await attributes(client, q.dlqUrls[def.name]),
      })),
    );
    const big = 'x'.repeat(MAX_MESSAGE_BYTES);
    const accepted = await send(client, q.urls.alarm, big);
    const tooBig = await send(client, q.urls.alarm, `${big}x`).catch((err: Error) => err);

    // Assert
    for (const { def, main, dlq } of attrs) {
      expect(main.MaximumMessageSize).toBe('1048576');
      expect(dlq.MaximumMessageSize).toBe('1048576');
      expect(main.VisibilityTimeout).toBe(String(def.visibilityTimeoutSeconds));
      expect(JSON.parse(main.RedrivePolicy ?? '{}')).toEqual({
        deadLetterTargetArn: dlq.QueueArn,
        maxReceiveCount: def.maxReceiveCount,
      });
    }
    expect(accepted.MessageId).toBeTruthy();
    expect(tooBig).toBeInstanceOf(Error);
  });

  it('still redrive to the dead-letter queue after a restart', async () => {
    // Arrange: a restored alarm queue (maxReceiveCount 5)
    const dir = tempDir();
    await stop((await start(dir)).q);
    const { q, client } = await start(dir);
    await send(client, q.urls.alarm, 'poison');

    // Act: five receives that fail (made visible again at once), then a sixth
    for (let i = 0; i < 5; i++) {
      const [m] = await receive(client, q.urls.alarm, 1);
      await makeVisible(client, q.urls.alarm, m);
    }
    const sixth = await receive(client, q.urls.alarm, 1);
    const dlq = await receive(client, q.dlqUrls.alarm, 1);

    // Assert
    expect(sixth).toEqual([]);
    expect(dlq.map((m) => m.Body)).toEqual(['poison']);
  });

  it('keep nothing with :memory: (no data directory)', async () => {
    // Arrange
    const first = await start(null);
    await send(first.client, first.q.urls.alarm, 'gone');
    await stop(first.q);

    // Act
    const second = await start(null);
    const got = await receive(second.client, second.q.urls.alarm);

    // Assert
    expect(got).toEqual([]);
    expect(second.q.released).toBe(0);
  });
});

describe('the local event source', () => {
  it('gathers a batch larger than one receive returns (25 = 10 + 10 + 5) and deletes all of it', async () => {
    // Arrange: 25 messages wait before the poller starts.
    const { q, client } = await start(null);
    const def = queues.find((d) => d.name === 'alarm')!;
    const url = q.urls.alarm;
    for (let i = 0; i < 25; i++) await send(client, url, `m${i}`);
    batches.length = 0;
    // Act
    const poller = startPoller(
      client,
      { ...def, consumer: 'test/fixtures/batch-consumer.ts', batchSize: 25 },
      url,
      REGION,
      { min: 1, max: 1, windowMs: 100 },
    );
    try {
      for (let i = 0; i < 100 && batches.flat().length < 25; i++) await new Promise((r) => setTimeout(r, 50));
      let left = '?';
      for (let i = 0; i < 100 && left !== '0/0'; i++) {
        const a = await attributes(client, url);
        left = `${a.ApproximateNumberOfMessages}/${a.ApproximateNumberOfMessagesNotVisible}`;
        if (left !== '0/0') await new Promise((r) => setTimeout(r, 50));
      }
      // Assert: one invocation with every message; none left visible or in flight.
      expect(batches.map((b) => b.length)).toEqual([25]);
      expect(new Set(batches[0])).toEqual(new Set(Array.from({ length: 25 }, (_, i) => `m${i}`)));
      expect(left).toBe('0/0');
    } finally {
      await poller.stop();
    }
  });
});
