import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { logger } from '../log.ts';

/**
 * The local queue at its worst (`SQS_CHAOS=1`): what a standard SQS queue may do and the emulator
 * never does, so that the integration suites see it. A layer over the local event source's reads and
 * deletes (startPoller's QueueReader), speaking only the SQS API, whatever emulator serves it:
 *
 * - **reorders**, within a batch (shuffled) and across batches (some messages are held back and handed
 *   out with a later batch);
 * - **redelivers**: some messages are delivered twice (a copy in a later batch, possibly processed at
 *   the same time as the first), and some are not deleted after their consumer succeeded but made
 *   visible again (a delete SQS lost), so they come back with a higher receive count;
 * - **runs out of in-flight room**: past `inFlightLimit` messages in flight (received and not yet
 *   deleted, or hidden by the consumer), a receive fails with `OverLimit` as SQS's does past about
 *   120,000; the limit is scaled down (2,000 by default) so that a test reaches it.
 *
 * Its random choices come from a seed (printed once per poller), so a failing run can be repeated
 * with `SQS_CHAOS_SEED`.
 */
export interface ChaosOptions {
  seed: number;
  /** Messages in flight past which a receive fails (SQS: about 120,000). */
  inFlightLimit: number;
  /** Share of received messages held back for a later batch. */
  holdBack: number;
  /** Share of received messages also delivered a second time. */
  duplicate: number;
  /** Share of successfully processed messages made visible again instead of deleted. */
  redeliver: number;
}

export const DEFAULT_CHAOS: Omit<ChaosOptions, 'seed'> = {
  inFlightLimit: 2_000,
  holdBack: 0.2,
  duplicate: 0.05,
  redeliver: 0.05,
};

/** The chaos the environment asks for (`SQS_CHAOS=1`, `SQS_CHAOS_SEED`, `SQS_CHAOS_IN_FLIGHT`), or none. */
export function chaosFromEnv(env: NodeJS.ProcessEnv = process.env): ChaosOptions | undefined {
  if (!['1', 'true'].includes((env.SQS_CHAOS ?? '').toLowerCase())) return undefined;
  const number = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name}: a whole number (got ${raw})`);
    return n;
  };
  return {
    ...DEFAULT_CHAOS,
    seed: number('SQS_CHAOS_SEED', Math.floor(Math.random() * 2 ** 31)),
    inFlightLimit: number('SQS_CHAOS_IN_FLIGHT', DEFAULT_CHAOS.inFlightLimit),
  };
}

/** mulberry32: a small seeded generator, enough to repeat a run's choices. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** How the local event source reads a queue: receives (up to `max`) and deletes what was processed. */
export interface QueueReader {
  receive(max: number, waitSeconds: number): Promise<Message[]>;
  remove(messages: Message[]): Promise<void>;
  /** On a stop: what it received and kept back for later made visible again (nothing left in flight). */
  release?(): Promise<void>;
}

/** An error as SQS answers a receive past the in-flight limit (the SDK's `OverLimit`). */
export class OverLimit extends Error {
  override readonly name = 'OverLimit';
}

/** What the chaos layer did, for tests and the local stack's statistics. */
export interface ChaosCounts {
  heldBack: number;
  duplicated: number;
  redelivered: number;
  overLimit: number;
  /** The most messages in flight it saw. */
  maxInFlight: number;
}

/**
 * How long an in-flight count read from the queue is used before it is read again (ms); the messages
 * received meanwhile are added to it.
 */
const IN_FLIGHT_READ_MS = 100;

/** `reader` with the chaos of `options` on top (see ChaosOptions). */
export function chaosReader(
  reader: QueueReader,
  client: SQSClient,
  url: string,
  options: ChaosOptions,
): QueueReader & { counts: ChaosCounts } {
  const random = seededRandom(options.seed);
  const counts: ChaosCounts = { heldBack: 0, duplicated: 0, redelivered: 0, overLimit: 0, maxInFlight: 0 };
  /** Received messages waiting for a later batch (held back, or a second delivery). */
  let later: Message[] = [];
  /** Message ids that already went through chaos once (a copy or a held message is not picked again). */
  const touched = new Set<string>();
  let inFlight = { n: 0, at: 0 };

  const readInFlight = async (): Promise<number> => {
    const now = Date.now();
    if (now - inFlight.at < IN_FLIGHT_READ_MS) return inFlight.n;
    const out = await client.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const n = Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    inFlight = { n, at: now };
    counts.maxInFlight = Math.max(counts.maxInFlight, n);
    return n;
  };

  /** Makes messages visible again at once (`quiet`: a failure is expected, e.g. a deleted message's copy). */
  const visibleAgain = async (messages: Message[], quiet = false) => {
    for (let i = 0; i < messages.length; i += 10) {
      await client
        .send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: url,
            Entries: messages
              .slice(i, i + 10)
              .map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 })),
          }),
        )
        .catch((err) => {
          if (!quiet) logger.warn('chaos: could not release a message', { error: err as Error });
        });
    }
  };

  const shuffle = <T>(list: T[]): T[] => {
    for (let i = list.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [list[i], list[j]] = [list[j], list[i]];
    }
    return list;
  };

  return {
    counts,
    async receive(max, waitSeconds) {
      // What waits for a later batch goes first (it was received before what SQS hands out now).
      const carried = later.splice(0, max);
      let got: Message[] = [];
      if (carried.length < max) {
        if ((await readInFlight()) >= options.inFlightLimit) {
          later.unshift(...carried);
          counts.overLimit++;
          throw new OverLimit(`${options.inFlightLimit} messages in flight: the queue's in-flight limit`);
        }
        got = await reader.receive(max - carried.length, carried.length > 0 ? 0 : waitSeconds);
        // Until the next read, what it received counts as in flight too.
        inFlight.n += got.length;
      }
      // Forget old ids now and then: they only keep one message from being picked twice.
      if (touched.size > 100_000) touched.clear();
      const batch: Message[] = [];
      for (const m of got) {
        const id = m.MessageId ?? '';
        if (touched.has(id)) {
          batch.push(m);
          continue;
        }
        const roll = random();
        if (roll < options.holdBack) {
          touched.add(id);
          later.push(m);
          counts.heldBack++;
        } else if (roll < options.holdBack + options.duplicate) {
          touched.add(id);
          batch.push(m);
          later.push({ ...m });
          counts.duplicated++;
        } else batch.push(m);
      }
      later = shuffle(later);
      return shuffle([...carried, ...batch]);
    },
    async remove(messages) {
      const keep: Message[] = [];
      const again: Message[] = [];
      for (const m of messages) {
        if (!touched.has(m.MessageId ?? '') && random() < options.redeliver) again.push(m);
        else keep.push(m);
      }
      if (again.length > 0) {
        counts.redelivered += again.length;
        await visibleAgain(again);
      }
      await reader.remove(keep);
    },
    async release() {
      // A copy of a message processed meanwhile is gone with it: its release fails, harmlessly.
      const held = later;
      later = [];
      await visibleAgain(held, true);
    },
  };
}
