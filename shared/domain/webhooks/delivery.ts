import { performance } from 'node:perf_hooks';
import { config } from '../../config/env.ts';
import { parseJson } from '../../json.ts';
import { logger } from '../../log.ts';
import type { WebhookBundle, WebhookMessage } from '../../contracts/messages.ts';
import { retryDelaySeconds } from '../../messaging/retry.ts';
import type { UrlCheck } from '../../outbound/url-guard.ts';
import {
  attemptOf,
  attemptOne,
  budgetAttemptOf,
  type DeliveryRecord,
  type Item,
  itemsOfBundle,
  record,
  replaySince,
  type Sent,
  wasDelivered,
} from './attempt.ts';
import { defaultDeliveryDeps, type DeliveryDeps } from './delivery-deps.ts';

/**
 * Outbound webhook delivery (API guide §12.1, §12.5): the consumer of the webhook queue, and the
 * first attempt a producer makes itself (deliverNow, the alarm pipeline: only what fails is queued).
 *
 * A message is a bundle (the events a producer raised for one task at once) or one event. Each event
 * is POSTed (exactly its stored body) to the task's webhook URL with the Standard Webhooks headers;
 * only HTTP 200 within the timeout is a success. An event of a bundle that failed is queued again as
 * a message of its own, delayed by the backoff of that attempt; a one-event message that failed is
 * reported back to SQS (partial batch response) after its visibility is set to the backoff of that
 * attempt (5 s, 30 s, 2 min, 10 min, 30 min, 1 h). After the last retry the message becomes visible at
 * once and the queue's redrive policy moves it to the dead-letter queue (7 attempts in all).
 *
 * Throughput: a batch's events go out in parallel over kept-alive connections, except events that
 * share an order key (one workflow, one compression metric), which go one after the other in queue
 * order. Bookkeeping is one table write per task per batch in the common case: every attempt is
 * recorded, the settling first attempts in the task's delivery log, failures and retries as items of
 * their own (repository.ts). Delivery is at least once: an event whose message comes back (a retry, a
 * producer that ran twice) may reach the receiver again, always with the same `webhook-id`.
 */
/** How many sends of one batch are in flight at once (one receiver that takes 50 ms still gets 200/s per poller). */
const SEND_CONCURRENCY = 16;

const validEvent = (e: Partial<WebhookMessage> | undefined): boolean =>
  !!e && typeof e.event_id === 'string' && e.event_id !== '' && !!e.body && typeof e.body === 'object';

/** The events of a message (a bundle's, or the one of a one-event message); undefined when malformed. */
function parseMessage(record: DeliveryRecord): Item[] | undefined {
  try {
    const m = parseJson(record.body) as (WebhookMessage | WebhookBundle) | undefined;
    if (!m || !Number.isSafeInteger(m.task_id)) return undefined;
    if (m.kind === 'webhooks') {
      if (!Array.isArray(m.events) || m.events.length === 0 || !m.events.every(validEvent)) return undefined;
      return itemsOfBundle(m, m.events, () => record);
    }
    return validEvent(m) ? [{ record, bundled: false, msg: m }] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Orders a batch for sending: one lane per order key (its events in queue order), every event
 * without a key a lane of its own; lanes run in parallel, at most `limit` sends at a time.
 */
async function sendLanes(items: Item[], limit: number, send: (item: Item) => Promise<void>): Promise<void> {
  const lanes = new Map<string, Item[]>();
  for (const item of items) {
    const key = item.msg.order_key
      ? `${item.msg.task_id}#${item.msg.order_key}`
      : `#${item.record.messageId}#${item.msg.event_id}`;
    const lane = lanes.get(key);
    if (lane) lane.push(item);
    else lanes.set(key, [item]);
  }
  const queue = [...lanes.values()];
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, queue.length) }, async () => {
    while (next < queue.length) {
      const lane = queue[next++];
      for (const item of lane) await send(item);
    }
  });
  await Promise.all(workers);
}

/** Delivers a batch of webhook messages; returns the ids SQS must deliver again. */
export async function deliverWebhooks(
  records: DeliveryRecord[],
  deps: DeliveryDeps = defaultDeliveryDeps,
): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> {
  const failures = new Set<string>();
  const items: Item[] = [];
  for (const record of records) {
    const parsed = parseMessage(record);
    if (parsed) items.push(...parsed);
    else {
      // Cannot succeed: leave it to the redrive policy, which parks it in the dead-letter queue.
      logger.error('malformed webhook message', { messageId: record.messageId });
      failures.add(record.messageId);
    }
  }
  const { back } = await deliverItems(items, deps);
  await Promise.all(
    back.map(async ({ item, seconds }) => {
      if (failures.has(item.record.messageId)) return;
      failures.add(item.record.messageId);
      try {
        await deps.delayRetry(item.record.receiptHandle, seconds);
      } catch (err) {
        logger.warn('could not set the webhook retry delay', {
          eventId: item.msg.event_id,
          error: err as Error,
        });
      }
    }),
  );
  return { batchItemFailures: [...failures].map((itemIdentifier) => ({ itemIdentifier })) };
}

/**
 * Sends the events of a batch (replays looked up first), records the attempts and queues again, as
 * messages of their own, the events of a bundle that failed. Returns what was sent, the items whose
 * message must come back (with the visibility, seconds, to come back after) and, given a `deadline`
 * (performance.now() ms), the items whose turn came after it, unsent (each lane's rest, in order).
 */
export async function deliverItems(
  items: Item[],
  deps: DeliveryDeps,
  deadline = Number.POSITIVE_INFINITY,
): Promise<{ sent: Sent[]; back: { item: Item; seconds: number }[]; late: Item[] }> {
  // Copies of one event in one batch (a producer that ran twice) are sent once and share its fate.
  const copies = new Map<string, Item[]>();
  for (const item of items) copies.set(item.msg.event_id, [...(copies.get(item.msg.event_id) ?? []), item]);
  const backoff = config().webhookBackoffSeconds;
  const checks = new Map<string, Promise<UrlCheck>>();
  const sent: Sent[] = [];
  const deferred: Item[] = [];
  const exhausted: Item[] = [];
  const late: Item[] = [];
  const firsts = [...copies.values()].map((c) => c[0]);
  await sendLanes(firsts, SEND_CONCURRENCY, async (item) => {
    if (performance.now() > deadline) return void late.push(item);
    // A message queued again by its bundle counts the bundle's attempt: once the retries are used
    // up it goes back untried, until the redrive policy parks it in the dead-letter queue.
    if (budgetAttemptOf(item) > backoff.length + 1) return void exhausted.push(item);
    const since = replaySince(item);
    if (since !== undefined) {
      if (await wasDelivered(item, since, deps)) return void sent.push({ item });
      // Its recorded attempts may have used the retries up.
      if (budgetAttemptOf(item) > backoff.length + 1) return void exhausted.push(item);
      // A fresh replay: its original may still be on its way (two copies of one alarm processed at
      // once). Look again after the first backoff; send then if it was still not delivered.
      if (item.msg.replay_since_ms !== undefined && item.record.receiveCount <= 1 && !item.msg.deferred)
        return void deferred.push(item);
    }
    sent.push({ item, attempt: await attemptOne(item, checks, deps) });
  });
  await record(sent, deps);

  // What goes again: one-event messages by their visibility (the backoff of their attempt; 0 once the
  // retries are used up, for the redrive policy), events of a bundle as messages of their own (unless
  // a one-event copy of the event already carries it).
  const again = [
    ...sent
      .filter((s) => s.attempt?.outcome === 'failed')
      .map((s) => ({ item: s.item, why: 'failed' as const })),
    ...deferred.map((item) => ({ item, why: 'deferred' as const })),
    ...exhausted.map((item) => ({ item, why: 'exhausted' as const })),
  ];
  const back: { item: Item; seconds: number }[] = [];
  const requeue: { item: Item; body: WebhookMessage; delaySeconds: number }[] = [];
  for (const { item, why } of again) {
    const all = copies.get(item.msg.event_id) ?? [item];
    const seconds =
      why === 'deferred'
        ? (backoff[0] ?? 0)
        : why === 'failed'
          ? retryDelaySeconds(budgetAttemptOf(item), backoff)
          : 0;
    const single = all.filter((c) => !c.bundled);
    for (const c of single) back.push({ item: c, seconds });
    if (single.length > 0) continue;
    const { msg } = item;
    // The attempts it has made: received on its own, a used-up one goes back untried to the DLQ.
    const made =
      why === 'deferred' ? (msg.attempts_before ?? 0) : attemptOf(item) - (why === 'exhausted' ? 1 : 0);
    requeue.push({
      item,
      delaySeconds: seconds,
      body: { ...msg, attempts_before: made, ...(why === 'deferred' ? { deferred: true } : {}) },
    });
  }
  if (requeue.length > 0) {
    try {
      await deps.requeue(requeue.map(({ body, delaySeconds }) => ({ body, delaySeconds })));
    } catch (err) {
      // The message comes back (a bundle whole, after the first backoff; its delivered events are in
      // the log): for a producer's first attempt, the producer runs again (deliverNow).
      logger.warn('could not queue webhook retries', {
        count: requeue.length,
        error: err as Error,
      });
      for (const { item } of requeue) back.push({ item, seconds: backoff[0] ?? 0 });
    }
  }
  return { sent, back, late };
}
