import { performance } from 'node:perf_hooks';
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { QueueDef } from '../../infra/consumers.ts';
import { logger } from '../log.ts';
import { asFunction } from './call-record.ts';
import { type ChaosCounts, type ChaosOptions, chaosReader, type QueueReader } from './chaos.ts';
import { lambdaContext, loadHandler } from './lambda.ts';
import { recordInvocation } from './stats.ts';

function toRecord(m: Message, queueArn: string, region: string): SQSRecord {
  const a = m.Attributes ?? {};
  return {
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/** Most messages one ReceiveMessage returns, and one DeleteMessageBatch takes. */
const SQS_RECEIVE_MAX = 10;

/** How an event source reads one queue: its batching window and how many batches run at once. */
export interface PollerScale {
  /** Concurrent batches when the queue is quiet (Lambda starts five). */
  min: number;
  /** The most it grows to while batches keep waiting for a free slot. */
  max: number;
  /**
   * How long a partial batch is gathered before its consumer runs (ms), as an event source's batching
   * window does: under load one invocation, receive and delete serve up to ten messages.
   */
  windowMs: number;
}

/**
 * A queue read as Lambda's event source reads it: up to `max` messages (ReceiveMessage returns ten at
 * most, so a larger batch takes more receives, the next one only while the last came back full), and
 * deletes of the processed ones, ten to a request.
 */
export function sqsReader(client: SQSClient, url: string, queue: string): QueueReader {
  return {
    async receive(max, waitSeconds) {
      const got: Message[] = [];
      while (got.length < max) {
        const want = Math.min(SQS_RECEIVE_MAX, max - got.length);
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: want,
            WaitTimeSeconds: got.length === 0 ? waitSeconds : 0,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        got.push(...(out.Messages ?? []));
        if ((out.Messages?.length ?? 0) < want) break;
      }
      return got;
    },
    async remove(messages) {
      const deletes: Promise<unknown>[] = [];
      for (let i = 0; i < messages.length; i += SQS_RECEIVE_MAX) {
        const chunk = messages.slice(i, i + SQS_RECEIVE_MAX);
        deletes.push(
          client
            .send(
              new DeleteMessageBatchCommand({
                QueueUrl: url,
                Entries: chunk.map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle })),
              }),
            )
            .catch((err) => logger.warn('local poller delete failed', { queue, error: err as Error })),
        );
      }
      await Promise.all(deletes);
    },
  };
}

/**
 * The local stand-in for Lambda's SQS event source mapping. A reader long-polls the queue and gathers
 * a batch (up to the batch size, for at most the batching window after its first message); the batch
 * goes to the consumer as soon as one of the concurrency slots is free (while none is, the batch keeps
 * filling up). Messages the consumer reports as failed (partial batch response) or a batch that threw
 * reappear after their visibility timeout; the others are deleted. Like the event source it scales: a
 * batch that waited for a slot adds one (up to `max`), a slot idle for a while is retired (down to
 * `min`).
 */
export function startPoller(
  client: SQSClient,
  def: QueueDef,
  url: string,
  region: string,
  scale: PollerScale,
  /**
   * The queue at its worst (shared/local/chaos.ts), for tests, with a client of its own: what it does
   * to the queue is the emulator's misbehaviour, not calls of the consumer's role.
   */
  chaos?: { options: ChaosOptions; client: SQSClient },
) {
  let running = true;
  let slots = scale.min;
  let busy = 0;
  let lastUsed = Date.now();
  const inFlight = new Set<Promise<void>>();
  let freed: (() => void) | undefined;
  const arn = `arn:aws:sqs:${region}:000000000000:tocsin-${def.name}`;
  const fn = `tocsin-${def.name}-consumer`;

  const plain = sqsReader(client, url, def.name);
  const source = chaos ? chaosReader(plain, chaos.client, url, chaos.options) : plain;
  if (chaos) logger.warn('local queue chaos on', { queue: def.name, ...chaos.options });
  const receive = (max: number, waitSeconds: number) => source.receive(max, waitSeconds);

  const consume = async (messages: Message[]) => {
    const handler = await loadHandler(def.consumer);
    const event: SQSEvent = { Records: messages.map((m) => toRecord(m, arn, region)) };
    let failed = new Set<string>();
    const started = performance.now();
    try {
      const res = (await asFunction(`queue:${def.name}`, () =>
        handler(event, lambdaContext(fn, def.timeoutSeconds * 1000)),
      )) as { batchItemFailures?: { itemIdentifier: string }[] } | undefined;
      failed = new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      logger.error('local consumer threw; the whole batch will be retried', {
        queue: def.name,
        error: err as Error,
      });
      return;
    } finally {
      recordInvocation(fn, performance.now() - started);
    }
    await source.remove(messages.filter((m) => !failed.has(m.MessageId ?? '')));
  };

  const dispatch = (messages: Message[]) => {
    busy++;
    lastUsed = Date.now();
    const p: Promise<void> = consume(messages)
      .catch((err) => logger.error('local consumer failed', { queue: def.name, error: err as Error }))
      .finally(() => {
        busy--;
        inFlight.delete(p);
        freed?.();
      });
    inFlight.add(p);
  };

  const slotFreed = () => new Promise<void>((r) => (freed = r));

  const reader = (async () => {
    let batch: Message[] = [];
    while (running) {
      try {
        if (batch.length === 0) {
          batch = await receive(def.batchSize, 1);
          if (batch.length === 0) {
            // Quiet: retire a slot not needed for a while.
            if (slots > scale.min && busy < slots && Date.now() - lastUsed > 5_000) slots--;
            continue;
          }
          if (batch.length < def.batchSize && scale.windowMs > 0) {
            await new Promise((r) => setTimeout(r, scale.windowMs));
            batch.push(...(await receive(def.batchSize - batch.length, 0)));
          }
        }
        // Every slot is busy: keep the batch filling while waiting; a full batch that has to wait
        // means the queue outgrows the concurrency, so add a slot.
        while (busy >= slots && running) {
          if (batch.length >= def.batchSize && slots < scale.max) {
            slots++;
            break;
          }
          await Promise.race([slotFreed(), new Promise((r) => setTimeout(r, scale.windowMs || 10))]);
          if (batch.length < def.batchSize) batch.push(...(await receive(def.batchSize - batch.length, 0)));
        }
        // Dispatched even when stopping: a stop lets what was received run (it drains, it does not drop).
        dispatch(batch);
        batch = [];
      } catch (err) {
        if (!running) break;
        logger.warn('local poller receive failed', { queue: def.name, error: err as Error });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();

  return {
    /** Concurrency slots now. */
    get slots() {
      return slots;
    },
    /** What the chaos layer did (undefined without chaos). */
    chaos: 'counts' in source ? (source as { counts: ChaosCounts }).counts : undefined,
    async stop() {
      running = false;
      await reader;
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      await source.release?.();
    },
  };
}
