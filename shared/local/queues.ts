import { performance } from 'node:perf_hooks';
import { Server as NetServer } from 'node:net';
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
import { logger } from '../log.ts';
import { LOOPBACK } from './paths.ts';
import { lambdaContext, loadHandler } from './lambda.ts';
import { recordInvocation } from './stats.ts';

export interface LocalQueues {
  endpoint: string;
  urls: Record<string, string>;
  dlqUrls: Record<string, string>;
  /** Messages a previous run held in flight when it ended, made visible again at this start. */
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

/**
 * fauxqs 2.4.1 binds 0.0.0.0 whatever `host` says (host only shapes queue URLs). While it starts,
 * a listen on 0.0.0.0 is turned into one on 127.0.0.1. The loopback test (local-isolation.test.ts)
 * fails if this ever stops working.
 */
async function onLoopback<T>(start: () => Promise<T>): Promise<T> {
  const listen = NetServer.prototype.listen;
  NetServer.prototype.listen = function (this: NetServer, ...args: unknown[]) {
    const first = args[0] as { host?: string } | undefined;
    if (first && typeof first === 'object' && first.host === '0.0.0.0')
      args[0] = { ...first, host: LOOPBACK };
    return (listen as (...a: unknown[]) => NetServer).apply(this, args);
  } as typeof listen;
  try {
    return await start();
  } finally {
    NetServer.prototype.listen = listen;
  }
}

let persistenceFixed = false;

/**
 * fauxqs 2.4.1 persistence bug: making an in-flight message visible again (ChangeMessageVisibility
 * 0, which the consumers use when retries are used up) writes NULL into the NOT NULL receive count,
 * so the write throws after the message left the in-flight set: it is gone until a restart, and the
 * SDK's retry then fails with "Message does not exist". The fix keeps the receive count and clears
 * only the receipt handle and deadline, as the in-memory state does.
 */
async function fixFauxqsPersistence(): Promise<void> {
  if (persistenceFixed) return;
  const mod = (await import(new URL('./persistence.js', import.meta.resolve('fauxqs')).href)) as {
    PersistenceManager?: { prototype: Record<string, unknown> };
  };
  const proto = mod.PersistenceManager?.prototype;
  if (!proto || typeof proto.updateMessageReady !== 'function') {
    throw new Error(
      'fauxqs changed: PersistenceManager.updateMessageReady is gone; review shared/local/queues.ts',
    );
  }
  const statements = new WeakMap<object, { run(...a: unknown[]): unknown }>();
  proto.updateMessageReady = function (
    this: { db: { prepare(sql: string): { run(...a: unknown[]): unknown } } },
    id: string,
  ) {
    let stmt = statements.get(this);
    if (!stmt) {
      stmt = this.db.prepare(
        'UPDATE sqs_messages SET receipt_handle = NULL, visibility_deadline = NULL WHERE message_id = ?',
      );
      statements.set(this, stmt);
    }
    stmt.run(id);
  };
  persistenceFixed = true;
}

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
 * Makes visible again what a previous run held in flight. Its consumers were the pollers of that
 * process, which is gone (the data directory lock makes sure), so no one is working on these
 * messages: waiting out their visibility timeout (up to minutes) would only delay them. A retry
 * backoff a consumer set (ChangeMessageVisibility) is cut short the same way: the retry comes at once.
 */
async function releaseInFlight(
  server: FauxqsServer,
  client: SQSClient,
  name: string,
  url: string,
): Promise<number> {
  const inflight = server.inspectQueue(name)?.messages.inflight ?? [];
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
 * Starts the SQS emulator on 127.0.0.1 with every queue of the stack and its dead-letter queue. With a
 * data directory, queues and messages live in SQLite there (fauxqs writes every change through), so
 * what was queued survives a crash; on a restart the queues are reused, not recreated.
 */
export async function startQueues(
  port: number,
  region: string,
  dataDir: string | null = null,
): Promise<LocalQueues> {
  if (dataDir) await fixFauxqsPersistence();
  const server = await onLoopback(() =>
    startFauxqs({
      port,
      logger: false,
      host: LOOPBACK,
      defaultRegion: region,
      ...(dataDir ? { dataDir } : {}),
    }),
  );
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
        MaximumMessageSize: String(MAX_MESSAGE_BYTES),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: `arn:aws:sqs:${region}:${ACCOUNT}:${dlqName}`,
          maxReceiveCount: q.maxReceiveCount,
        }),
      });
      released += await releaseInFlight(server, client, mainName, urls[q.name]);
      released += await releaseInFlight(server, client, dlqName, dlqUrls[q.name]);
    }
    return { endpoint: server.address, urls, dlqUrls, released, stop: () => server.stop() };
  } catch (err) {
    await server.stop().catch(() => undefined);
    throw err;
  } finally {
    client.destroy();
  }
}

/** Where fauxqs keeps its SQLite database inside the stack's data directory. */
export const sqsDataDir = (dataDir: string) => join(dataDir, 'sqs');

export function localSqsClient(endpoint: string, region: string): SQSClient {
  return new SQSClient({ endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
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

/** How many batches of one queue a poller works on at once, as Lambda's SQS event source scales. */
export interface PollerScale {
  /** Concurrent batches when the queue is quiet (Lambda starts five). */
  min: number;
  /** The most it grows to while receives keep coming back full. */
  max: number;
}

/**
 * The local stand-in for Lambda's SQS event source mapping: long-polls a queue, invokes the
 * consumer with an SQS event, deletes what succeeded and leaves reported failures (partial batch
 * responses) or a thrown batch to reappear after their visibility timeout. Like the event source, it
 * scales with the queue: a receive that comes back full adds a concurrent batch (up to `max`), an
 * empty one retires one (down to `min`).
 */
export function startPoller(
  client: SQSClient,
  def: QueueDef,
  url: string,
  region: string,
  scale: PollerScale,
) {
  let running = true;
  let active = 0;
  let lastGrowth = 0;
  const loops = new Set<Promise<void>>();
  const arn = `arn:aws:sqs:${region}:000000000000:tocsin-${def.name}`;
  const fn = `tocsin-${def.name}-consumer`;
  const spawn = () => {
    active++;
    const p: Promise<void> = loop()
      .catch((err) => logger.error('local poller stopped', { queue: def.name, error: err as Error }))
      .finally(() => {
        active--;
        loops.delete(p);
      });
    loops.add(p);
  };
  const loop = async () => {
    const handler = await loadHandler(def.consumer);
    while (running) {
      let messages: Message[] = [];
      try {
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: def.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        messages = out.Messages ?? [];
      } catch (err) {
        if (!running) break;
        logger.warn('local poller receive failed', { queue: def.name, error: err as Error });
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (messages.length === 0) {
        if (active > scale.min) return;
        continue;
      }
      if (messages.length >= def.batchSize && active < scale.max && Date.now() - lastGrowth > 100) {
        lastGrowth = Date.now();
        spawn();
      }
      const event: SQSEvent = { Records: messages.map((m) => toRecord(m, arn, region)) };
      let failed = new Set<string>();
      const started = performance.now();
      try {
        const res = (await handler(event, lambdaContext(fn, def.timeoutSeconds * 1000))) as
          | { batchItemFailures?: { itemIdentifier: string }[] }
          | undefined;
        failed = new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      } catch (err) {
        logger.error('local consumer threw; the whole batch will be retried', {
          queue: def.name,
          error: err as Error,
        });
        continue;
      } finally {
        recordInvocation(fn, performance.now() - started);
      }
      const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
      if (done.length > 0) {
        await client
          .send(
            new DeleteMessageBatchCommand({
              QueueUrl: url,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
            }),
          )
          .catch((err) =>
            logger.warn('local poller delete failed', { queue: def.name, error: err as Error }),
          );
      }
    }
  };
  for (let i = 0; i < scale.min; i++) spawn();
  return {
    /** Concurrent batches now. */
    get active() {
      return active;
    },
    async stop() {
      running = false;
      while (loops.size > 0) await Promise.all([...loops]);
    },
  };
}
