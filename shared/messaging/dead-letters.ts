import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { config } from '../config/env.ts';
import type { QueueName } from '../contracts/messages.ts';
import { queueUrl, sqs } from './sqs.ts';

/**
 * Reading and redriving a queue's dead-letter queue (`GET /delivery/dlq`, `POST /delivery/dlq/redrive`).
 *
 * SQS cannot peek: a message is only seen by receiving it, which hides it for a visibility timeout.
 * A scan receives (10 at most per call, long-polling 1 s so every SQS server is asked) with a short
 * visibility timeout and keeps what it received hidden until the scan ends, so each receive returns
 * messages not seen yet; then it makes them visible again at once (ChangeMessageVisibility 0), except
 * the ones it moved. Limits: a scan reads at most `max` messages (a larger DLQ is reported as not
 * complete); during a scan its messages are hidden from another scan (two operators listing at once
 * each see part of the queue); each scan adds one to a message's ApproximateReceiveCount (the DLQ has
 * no redrive policy, so nothing moves because of it); a scan that dies before releasing leaves its
 * messages hidden for SCAN_VISIBILITY_SECONDS only.
 */
export interface DeadLetter {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** SQS's ApproximateReceiveCount: the source queue's receives plus every scan of the DLQ. */
  receiveCount: number;
  /** When the message was first sent (to the source queue), Unix seconds. */
  sentAt?: number;
}

/** How long a scan keeps what it received hidden (the longest a dead scan hides messages). */
export const SCAN_VISIBILITY_SECONDS = 30;
/** Messages one scan reads at most (a hundred receives). */
export const MAX_SCAN = 1000;

export function dlqUrl(queue: QueueName): string {
  const url = config().dlqUrls[queue];
  if (!url) throw new Error(`config: dead-letter queue url for ${queue} is not set`);
  return url;
}

export interface Scan {
  messages: DeadLetter[];
  /** The whole queue was read (a receive came back empty). */
  complete: boolean;
}

/**
 * Receives up to `max` messages of a dead-letter queue, keeping them hidden until `release`; with
 * `wanted`, it stops once `want` of the messages read are wanted.
 */
export async function scanDeadLetters(
  queue: QueueName,
  max: number,
  wanted: (m: DeadLetter) => boolean = () => true,
  want = Number.POSITIVE_INFINITY,
): Promise<Scan> {
  const url = dlqUrl(queue);
  const messages: DeadLetter[] = [];
  const limit = Math.min(max, MAX_SCAN);
  let found = 0;
  while (messages.length < limit && found < want) {
    const out = await sqs().send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: Math.min(10, limit - messages.length),
        VisibilityTimeout: SCAN_VISIBILITY_SECONDS,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
      }),
    );
    const got = out.Messages ?? [];
    if (got.length === 0) return { messages, complete: true };
    for (const m of got) {
      const sent = Number(m.Attributes?.SentTimestamp);
      const letter: DeadLetter = {
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
        receiveCount: Number(m.Attributes?.ApproximateReceiveCount) || 0,
        ...(Number.isFinite(sent) && sent > 0 ? { sentAt: Math.floor(sent / 1000) } : {}),
      };
      messages.push(letter);
      if (wanted(letter)) found++;
    }
  }
  // Stopped early: whether the queue held more is not known.
  return { messages, complete: false };
}

const chunks = <T>(items: T[], size = 10): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, i * size + size));

/** Makes scanned messages visible again at once; best effort (they reappear after the scan's timeout anyway). */
export async function releaseDeadLetters(queue: QueueName, messages: DeadLetter[]): Promise<void> {
  const url = dlqUrl(queue);
  await Promise.all(
    chunks(messages).map((batch) =>
      sqs()
        .send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: url,
            Entries: batch.map((m, i) => ({
              Id: String(i),
              ReceiptHandle: m.receiptHandle,
              VisibilityTimeout: 0,
            })),
          }),
        )
        .catch(() => undefined),
    ),
  );
}

/** SendMessageBatch takes 10 messages and 1 MiB in all: batches within both (a message is at most 1 MiB). */
const BATCH_BYTES = 1_000_000;

function sendBatches(moves: Move[]): Move[][] {
  const batches: Move[][] = [];
  let current: Move[] = [];
  let bytes = 0;
  for (const m of moves) {
    const size = Buffer.byteLength(m.body, 'utf8');
    if (current.length > 0 && (current.length === 10 || bytes + size > BATCH_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(m);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

export interface Move {
  letter: DeadLetter;
  /** The body to send to the source queue (the dead letter's, or a rewritten one). */
  body: string;
}

/**
 * Moves dead letters back to their source queue: each is sent first, and deleted from the
 * dead-letter queue only once it is on the source queue. A crash in between leaves a copy in both
 * (a duplicate, which the consumers, idempotent per event / job / alarm, absorb), never a loss.
 * Returns the ids moved; a message that could not be sent stays in the dead-letter queue.
 */
export async function moveDeadLetters(queue: QueueName, moves: Move[]): Promise<string[]> {
  const source = queueUrl(queue);
  const dlq = dlqUrl(queue);
  const moved: string[] = [];
  await Promise.all(
    sendBatches(moves).map(async (batch) => {
      const sent = await sqs().send(
        new SendMessageBatchCommand({
          QueueUrl: source,
          Entries: batch.map((m, i) => ({ Id: String(i), MessageBody: m.body })),
        }),
      );
      const ok = (sent.Successful ?? []).map((s) => batch[Number(s.Id)]);
      if (ok.length === 0) return;
      const deleted = await sqs().send(
        new DeleteMessageBatchCommand({
          QueueUrl: dlq,
          Entries: ok.map((m, i) => ({ Id: String(i), ReceiptHandle: m.letter.receiptHandle })),
        }),
      );
      for (const d of deleted.Successful ?? []) moved.push(ok[Number(d.Id)].letter.messageId);
    }),
  );
  return moved;
}
