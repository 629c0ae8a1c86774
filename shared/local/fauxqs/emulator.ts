import { appendFileSync } from 'node:fs';
import {
  ChangeMessageVisibilityBatchCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { FauxqsServer, startFauxqs } from 'fauxqs';
import { queues } from '../../../infra/consumers.ts';
import { logger } from '../../log.ts';
import { LOOPBACK } from '../paths.ts';
import {
  type EmulatorStart,
  type EmulatorStarted,
  localSqsClient,
  MAX_MESSAGE_BYTES,
  queueUrlOf,
  SQS_ACCOUNT,
} from '../queues.ts';
import { LISTEN_ON_LOOPBACK, refuseUnlessLoopback } from './loopback.ts';

/**
 * The SQS emulator of the local stack, in a process of its own (a child the stack forks, see
 * startQueues in shared/local/queues.ts): fauxqs with the stack's queues and their dead-letter queues.
 * Its CPU is then its own, apart from the service's (the benchmarks print it beside the service's),
 * and every client of the queues, the API's included, reaches it over HTTP as clients reach SQS.
 *
 * Messages from the stack: `start` (EmulatorStart, shared/local/queues.ts), answered with
 * EmulatorStarted; `stop`, after which the emulator closes its store and the process ends. The
 * process also stops when the stack is gone (its IPC channel closes, even on kill -9 of the stack)
 * and on SIGTERM; it ignores SIGINT: a Ctrl-C reaches every process of the terminal's job, and the
 * stack stops the emulator last, once its consumers have deleted what they finished.
 */

const DLQ_RETENTION_SECONDS = 1_209_600;
/** A dead-letter queue's visibility timeout (SQS's default: its listing hides messages for less). */
const DLQ_VISIBILITY_SECONDS = 30;

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

/** Appends every message sent to a queue, or moved to a dead-letter queue, to `file` (EmulatorStart.journal). */
function journalMessages(server: FauxqsServer, file: string): void {
  // A waiter that never matches sees every message the spy records.
  void server.spy.waitForMessage((m) => {
    if (m.service === 'sqs' && (m.status === 'published' || m.status === 'dlq')) {
      appendFileSync(file, `${JSON.stringify({ queue: m.queueName, status: m.status, body: m.body })}\n`);
    }
    return false;
  });
}

/**
 * Starts fauxqs on 127.0.0.1 with every queue of the stack and its dead-letter queue. With a data
 * directory, queues and messages live in SQLite there (fauxqs writes every change through), so what
 * was queued survives a crash; on a restart the queues are reused, not recreated.
 */
async function serve(
  start: EmulatorStart,
): Promise<{ server: FauxqsServer; started: EmulatorStarted & { type: 'started' } }> {
  const fauxqs = (await import(start.module ?? 'fauxqs')) as { startFauxqs: typeof startFauxqs };
  const server = await fauxqs.startFauxqs({
    port: start.port,
    logger: false,
    host: LOOPBACK,
    ...LISTEN_ON_LOOPBACK,
    defaultRegion: start.region,
    ...(start.dataDir ? { dataDir: start.dataDir } : {}),
    // The journal reads the emulator's message spy; it keeps nothing itself (one message buffered).
    ...(start.journal ? { messageSpies: { bufferSize: 1 } } : {}),
  });
  await refuseUnlessLoopback(server);
  if (start.journal) journalMessages(server, start.journal);
  const client = localSqsClient(server.address, start.region);
  try {
    const urls: Record<string, string> = {};
    const dlqUrls: Record<string, string> = {};
    let released = 0;
    for (const q of queues) {
      const dlqName = `tocsin-${q.name}-dlq`;
      const mainName = `tocsin-${q.name}`;
      dlqUrls[q.name] = queueUrlOf(dlqName, start.region, server.port);
      urls[q.name] = queueUrlOf(mainName, start.region, server.port);
      await ensureQueue(server, client, dlqName, dlqUrls[q.name], {
        MessageRetentionPeriod: String(DLQ_RETENTION_SECONDS),
        MaximumMessageSize: String(MAX_MESSAGE_BYTES),
      });
      await ensureQueue(server, client, mainName, urls[q.name], {
        VisibilityTimeout: String(q.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(q.retentionDays * 86_400),
        MaximumMessageSize: String(MAX_MESSAGE_BYTES),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: `arn:aws:sqs:${start.region}:${SQS_ACCOUNT}:${dlqName}`,
          maxReceiveCount: q.maxReceiveCount,
        }),
      });
      if (!start.release) continue;
      released += await releaseInFlight(server, client, mainName, urls[q.name], q.visibilityTimeoutSeconds);
      released += await releaseInFlight(server, client, dlqName, dlqUrls[q.name], DLQ_VISIBILITY_SECONDS);
    }
    return { server, started: { type: 'started', endpoint: server.address, urls, dlqUrls, released } };
  } catch (err) {
    await server.stop().catch(() => undefined);
    throw err;
  } finally {
    client.destroy();
  }
}

const send = process.send?.bind(process);
if (!send) throw new Error('shared/local/fauxqs/emulator.ts runs as a child of the local stack (fork)');

let server: FauxqsServer | undefined;
let stopping: Promise<void> | undefined;
/** Closes the store and ends the process (once). */
const stop = () => {
  stopping ??= (async () => {
    await server?.stop().catch((err) => logger.error('SQS emulator stop failed', { error: err as Error }));
    process.exit(0);
  })();
  return stopping;
};
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => void stop());
process.on('disconnect', () => void stop());
process.on('message', (m: EmulatorStart | { type: 'stop' }) => {
  if (m.type === 'stop') {
    void stop();
    return;
  }
  serve(m).then(
    (up) => {
      server = up.server;
      send(up.started);
    },
    (err: Error) => {
      send({ type: 'failed', message: err.message } satisfies EmulatorStarted, () => process.exit(1));
    },
  );
});
