import { performance } from 'node:perf_hooks';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { type QueueDef, queues } from '../../infra/definitions.ts';
import { localEmulatorOptions, serveInThread, withoutSdkLogging } from '../aws.ts';
import { asFunction } from '../call-record.ts';
import { logger } from '../log.ts';
import { type ChaosCounts, type ChaosOptions, chaosReader, type QueueReader } from './chaos.ts';
import { serveSqsInThread } from './fauxqs/in-thread.ts';
import { LISTEN_ON_LOOPBACK, refuseUnlessLoopback } from './fauxqs/loopback.ts';
import { LOOPBACK } from './paths.ts';
import { lambdaContext, loadHandler } from './lambda.ts';
import { recordInvocation } from './stats.ts';

export interface LocalQueues {
  endpoint: string;
  urls: Record<string, string>;
  dlqUrls: Record<string, string>;
  /** Messages the consumers of a previous run held when it ended, made visible again at this start. */
  released: number;
  stop(): Promise<void>;
}

const ACCOUNT = '000000000000';
/** SQS's largest message, 1 MiB; the CDK stack sets the same on every queue. */
export const MAX_MESSAGE_BYTES = 1_048_576;
const DLQ_RETENTION_SECONDS = 1_209_600;

/** The URL fauxqs gives a queue on this port (lookups use only the region and the name). */
export const queueUrlOf = (name: string, region: string, port: number) =>
  `http://sqs.${region}.${LOOPBACK}:${port}/${ACCOUNT}/${name}`;

/** Creates a queue, or brings an existing (restored) one to the wanted attributes. */
async function ensureQueue(
  server: FauxqsServer,
  client: SQSClient,
  name: string,
  url: string,
  attributes: Record<string, string>,
): Promise<void> {
  if (server.inspectQueue(name)) {
    // Never createQueue() a restored queue: it replaces the queue (and, in SQLite, its messages).
    await client.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: attributes }));
  } else {
    server.createQueue(name, { attributes });
  }
}

/**
 * Makes visible again what the consumers of a previous run held when that run ended without a clean
 * stop (killed, crashed, or its pollers did not finish in time). Those consumers are gone (the data
 * directory lock makes sure), so no one is working on these messages: waiting out their visibility
 * timeout (up to minutes) would only delay them. A message a consumer hid for a retry backoff
 * (ChangeMessageVisibility) is in flight too, and SQS does not tell the two apart; a message hidden
 * for longer than a receive hides it (`holdSeconds`, the queue's visibility timeout) can only be a
 * backoff and keeps it; a shorter backoff is cut short (its retry comes at once). After a clean stop
 * nothing is released: the pollers finished their batches, so whatever is in flight waits out a
 * backoff.
 */
async function releaseInFlight(
  server: FauxqsServer,
  client: SQSClient,
  name: string,
  url: string,
  holdSeconds: number,
): Promise<number> {
  const heldUntil = Date.now() + holdSeconds * 1000;
  const inflight = (server.inspectQueue(name)?.messages.inflight ?? []).filter(
    (m) => m.visibilityDeadline <= heldUntil,
  );
  for (let i = 0; i < inflight.length; i += 10) {
    const entries = inflight.slice(i, i + 10).map((m, j) => ({
      Id: String(j),
      ReceiptHandle: m.receiptHandle,
      VisibilityTimeout: 0,
    }));
    const out = await client.send(
      new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: entries }),
    );
    if (out.Failed?.length) {
      logger.warn('could not release messages left in flight', { queue: name, failed: out.Failed.length });
    }
  }
  return inflight.length;
}

/**
 * TOCSIN_QUEUE_LOG: every message sent to a queue, and every message moved to a dead-letter queue,
 * appended to `file` as one JSON line (`{queue, status, body}`), for tests that look at everything the
 * queues carried (a consumed message is gone from the emulator). Local runtime only.
 */
function journalMessages(server: FauxqsServer, file: string): void {
  // A waiter that never matches sees every message the spy records.
  void server.spy.waitForMessage((m) => {
    if (m.service === 'sqs' && (m.status === 'published' || m.status === 'dlq')) {
      appendFileSync(file, `${JSON.stringify({ queue: m.queueName, status: m.status, body: m.body })}\n`);
    }
    return false;
  });
}

/** A dead-letter queue's visibility timeout (SQS's default: its listing hides messages for less). */
const DLQ_VISIBILITY_SECONDS = 30;

/**
 * Starts the SQS emulator on 127.0.0.1 with every queue of the stack and its dead-letter queue. With a
 * data directory, queues and messages live in SQLite there (fauxqs writes every change through), so
 * what was queued survives a crash; on a restart the queues are reused, not recreated. `release`:
 * the previous run on the data directory did not stop cleanly, so what its consumers held is made
 * visible again (releaseInFlight). fauxqs runs as patched at install (patches/, described in
 * docs/local-stack.md); `emulator` replaces it in tests (a copy with one patch left out).
 */
export async function startQueues(
  port: number,
  region: string,
  dataDir: string | null = null,
  {
    release = true,
    emulator = { startFauxqs },
    journal,
  }: { release?: boolean; emulator?: { startFauxqs: typeof startFauxqs }; journal?: string } = {},
): Promise<LocalQueues> {
  const server = await emulator.startFauxqs({
    port,
    logger: false,
    host: LOOPBACK,
    ...LISTEN_ON_LOOPBACK,
    defaultRegion: region,
    ...(dataDir ? { dataDir } : {}),
    // The journal reads the emulator's message spy; it keeps nothing itself (one message buffered).
    ...(journal ? { messageSpies: { bufferSize: 1 } } : {}),
  });
  await refuseUnlessLoopback(server);
  if (journal) journalMessages(server, journal);
  serveSqsInThread(server);
  const stop = async () => {
    // From here on the API's requests go over HTTP: a stopped emulator refuses them as on AWS.
    serveInThread(server.address);
    await server.stop();
  };
  const client = localSqsClient(server.address, region);
  try {
    const urls: Record<string, string> = {};
    const dlqUrls: Record<string, string> = {};
    let released = 0;
    for (const q of queues) {
      const dlqName = `tocsin-${q.name}-dlq`;
      const mainName = `tocsin-${q.name}`;
      dlqUrls[q.name] = queueUrlOf(dlqName, region, server.port);
      urls[q.name] = queueUrlOf(mainName, region, server.port);
      await ensureQueue(server, client, dlqName, dlqUrls[q.name], {
        MessageRetentionPeriod: String(DLQ_RETENTION_SECONDS),
        MaximumMessageSize: String(MAX_MESSAGE_BYTES),
      });
      await ensureQueue(server, client, mainName, urls[q.name], {
        VisibilityTimeout: String(q.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(q.retentionDays * 86_400),
        MaximumMessageSize: String(MAX_MESSAGE_BYTES),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: `arn:aws:sqs:${region}:${ACCOUNT}:${dlqName}`,
          maxReceiveCount: q.maxReceiveCount,
        }),
      });
      if (!release) continue;
      released += await releaseInFlight(server, client, mainName, urls[q.name], q.visibilityTimeoutSeconds);
      released += await releaseInFlight(server, client, dlqName, dlqUrls[q.name], DLQ_VISIBILITY_SECONDS);
    }
    return { endpoint: server.address, urls, dlqUrls, released, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  } finally {
    client.destroy();
  }
}

/** Where fauxqs keeps its SQLite database inside the stack's data directory. */
export const sqsDataDir = (dataDir: string) => join(dataDir, 'sqs');

export function localSqsClient(endpoint: string, region: string): SQSClient {
  return withoutSdkLogging(
    new SQSClient({
      region,
      ...localEmulatorOptions(endpoint),
      cacheMiddleware: true,
      // Lambda's event source hands a consumer its messages without an MD5 check; the pollers that
      // stand in for it do not check one either.
      md5: false,
    }),
  );
}

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
    },
  };
}
