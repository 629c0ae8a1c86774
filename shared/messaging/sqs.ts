import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { config } from '../config/env.ts';
import { perContainer } from '../container.ts';
import { toWireJson } from '../json.ts';
import { sdkClient } from '../platform.ts';
import type { QueueName } from '../contracts/messages.ts';

let client: SQSClient | undefined;

export function sqs(): SQSClient {
  if (!client) {
    const cfg = config();
    client = sdkClient(
      'sqs',
      (s) =>
        new SQSClient({
          region: cfg.region,
          cacheMiddleware: true,
          // No MD5 of each body checked against SQS's answer: over HTTPS the transport already proves
          // integrity, and the SDK's MD5 (pure JavaScript) was a tenth of the API's SQS call CPU.
          md5: false,
          ...s,
        }),
      cfg.sqsEndpoint,
    );
  }
  return client;
}

/** A queue, or (`<queue>-dlq`) its dead-letter queue. */
export type Destination = QueueName | `${QueueName}-dlq`;

export function queueUrl(queue: Destination): string {
  const cfg = config();
  const url = queue.endsWith('-dlq')
    ? cfg.dlqUrls[queue.slice(0, -4) as QueueName]
    : cfg.queueUrls[queue as QueueName];
  if (!url) throw new Error(`config: queue url for ${queue} is not set`);
  return url;
}

export interface OutboundMessage {
  body: unknown;
  /** Seconds before the message becomes visible (0..900). */
  delaySeconds?: number;
}

interface Entry {
  message: OutboundMessage;
  /** Settles when the message is on the queue (or could not be put there). */
  settle: (err?: Error) => void;
}

/**
 * One SendMessageBatch of up to ten entries; entries the queue refused are sent again (up to three
 * more times, with backoff). Each entry is settled on its own outcome.
 */
async function sendBatch(
  queue: Destination,
  batch: Entry[],
  counts?: { messages: number; requests: number },
): Promise<void> {
  let pending = batch.map((e, j) => ({
    e,
    entry: {
      Id: String(j),
      MessageBody: toWireJson(e.message.body),
      DelaySeconds: e.message.delaySeconds
        ? Math.min(900, Math.max(0, Math.floor(e.message.delaySeconds)))
        : undefined,
    },
  }));
  try {
    for (let attempt = 0; pending.length > 0; attempt++) {
      const out = await sqs().send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl(queue), Entries: pending.map((p) => p.entry) }),
      );
      const failed = new Set((out.Failed ?? []).map((f) => f.Id));
      if (counts) {
        counts.requests++;
        counts.messages += pending.length - failed.size;
      }
      for (const p of pending) if (!failed.has(p.entry.Id)) p.e.settle();
      pending = pending.filter((p) => failed.has(p.entry.Id));
      if (pending.length === 0) break;
      if (attempt >= 3) throw new Error(`could not queue ${pending.length} message(s) on ${queue}`);
      await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  } catch (err) {
    for (const p of pending) p.e.settle(err as Error);
  }
}

/** Entries of `messages`, with one promise that settles when all are queued or one failed for good. */
function entriesOf(messages: OutboundMessage[]): { entries: Entry[]; done: Promise<void> } {
  const entries: Entry[] = [];
  const done = Promise.all(
    messages.map(
      (message) =>
        new Promise<void>((resolve, reject) => {
          entries.push({ message, settle: (err) => (err ? reject(err) : resolve()) });
        }),
    ),
  ).then(() => undefined);
  return { entries, done };
}

/**
 * Durably puts messages on a queue: batches of 10 in parallel, failed entries retried, and an error
 * thrown if any message could not be queued (callers must then not acknowledge their own input).
 */
export async function publish(queue: Destination, messages: OutboundMessage[]): Promise<void> {
  const { entries, done } = entriesOf(messages);
  for (let i = 0; i < entries.length; i += 10) void sendBatch(queue, entries.slice(i, i + 10));
  await done;
}

/** Messages waiting for a queue's send in flight, per queue (of this container). */
const linesOf = perContainer(() => new Map<QueueName, { sending: boolean; waiting: Entry[] }>());

/**
 * Puts one message on a queue, sharing a SendMessageBatch with the messages other requests of this
 * container put at the same time (group commit): with nothing in flight it goes at once, else it
 * waits for the send in flight and goes with the others that came meanwhile (up to ten a call). A
 * Lambda container serves one request at a time, so there it is always a send of its own; the local
 * API thread serves many at once and so sends far fewer, larger batches. Resolves once the message
 * is durably queued; an error means it was not.
 */
export function enqueue(queue: QueueName, message: OutboundMessage): Promise<void> {
  const { entries, done } = entriesOf([message]);
  const lines = linesOf();
  let line = lines.get(queue);
  if (!line) {
    line = { sending: false, waiting: [] };
    lines.set(queue, line);
  }
  line.waiting.push(...entries);
  pump(queue, line);
  return done;
}

/**
 * What enqueue() sent (requests that answered, messages they queued), for the local stack's
 * statistics: a Lambda container sends each of these messages in a request of its own, the local API
 * thread shares requests between them.
 */
export const enqueued = { messages: 0, requests: 0 };

function pump(queue: QueueName, line: { sending: boolean; waiting: Entry[] }): void {
  if (line.sending || line.waiting.length === 0) return;
  line.sending = true;
  const batches: Entry[][] = [];
  while (line.waiting.length > 0) batches.push(line.waiting.splice(0, 10));
  void Promise.all(batches.map((b) => sendBatch(queue, b, enqueued))).finally(() => {
    line.sending = false;
    pump(queue, line);
  });
}
