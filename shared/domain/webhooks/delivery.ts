import { performance } from 'node:perf_hooks';
import { config } from '../../config/env.ts';
import { parseJson } from '../../json.ts';
import { logger } from '../../log.ts';
import type { WebhookBundle, WebhookMessage } from '../../contracts/messages.ts';
import { delayedRetry, notDueFor, retryDelaySeconds, stillWaiting } from '../../messaging/retry.ts';
import { queueRetries } from '../../messaging/retry-queues.ts';
import type { UrlCheck } from '../../outbound/url-guard.ts';
import {
  attemptOf,
  attemptOne,
  budgetAttemptOf,
  type DeliveryRecord,
  heldAttempt,
  isRetry,
  type Item,
  itemsOfBundle,
  record,
  replaySince,
  type Sent,
  wasDelivered,
} from './attempt.ts';
import { admit, noteAttempt } from './circuit.ts';
import type { WebhookAttempt } from './repository.ts';
import { defaultDeliveryDeps, type DeliveryDeps } from './delivery-deps.ts';

/**
 * Outbound webhook delivery (API guide §12.1, §12.5): the consumer of the webhook queue, and the
 * first attempt a producer makes itself (deliverNow, the alarm pipeline: only what fails is queued).
 *
 * A message is a bundle (the events a producer raised for one task at once) or one event. Each event
 * is POSTed (exactly its stored body) to the task's webhook URL with the Standard Webhooks headers;
 * only HTTP 200 within the timeout is a success. An event that failed is queued again as a message of
 * its own, delayed by the backoff of that attempt (5 s, 30 s, 2 min, 10 min, 30 min, 1 h; past SQS's
 * 15-minute delay in steps), and the message it came in is acknowledged: no retry is held in flight,
 * so a receiver that is down never fills the queue's in-flight room. After the last retry the event
 * goes to the dead-letter queue itself (7 attempts in all). A task whose receiver keeps failing has
 * its events held by a circuit breaker (circuit.ts), so that it costs the batches it shares no
 * timeouts.
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
  // Only what could not be queued again comes back, after the queue's visibility timeout.
  for (const item of back) failures.add(item.record.messageId);
  return { batchItemFailures: [...failures].map((itemIdentifier) => ({ itemIdentifier })) };
}

/**
 * Sends the events of a batch (replays looked up first), records the attempts and puts what has to
 * go again on the queue, each event a message of its own delayed by its backoff (never held in
 * flight: the batch's messages are all acknowledged), or, once its retries are used up, in the
 * dead-letter queue. Returns what was sent, the items whose message must come back because that
 * could not be queued (`back`) and, given a `deadline` (performance.now() ms), the items whose turn
 * came after it, unsent (each lane's rest, in order).
 */
export async function deliverItems(
  items: Item[],
  deps: DeliveryDeps,
  deadline = Number.POSITIVE_INFINITY,
): Promise<{ sent: Sent[]; back: Item[]; late: Item[] }> {
  // Copies of one event in one batch (a producer that ran twice) are sent once and share its fate.
  const copies = new Map<string, Item[]>();
  for (const item of items) copies.set(item.msg.event_id, [...(copies.get(item.msg.event_id) ?? []), item]);
  const backoff = config().webhookBackoffSeconds;
  const checks = new Map<string, Promise<UrlCheck>>();
  const sent: Sent[] = [];
  const deferred: Item[] = [];
  const exhausted: Item[] = [];
  const late: Item[] = [];
  const now = Date.now();
  const firsts = [...copies.values()].map((c) => c[0]);
  // A chained retry received before it is due goes back with the rest of its delay, untried.
  const waiting = firsts.filter((item) => notDueFor(item.msg, now) > 0);
  await sendLanes(
    firsts.filter((item) => !waiting.includes(item)),
    SEND_CONCURRENCY,
    async (item) => {
      if (performance.now() > deadline) return void late.push(item);
      // Once the retries are used up (counting a bundle's attempt), it goes to the dead-letter queue.
      if (budgetAttemptOf(item) > backoff.length + 1) return void exhausted.push(item);
      // A copy of this retry's message took its attempt (and queues the next): nothing more to do.
      if (isRetry(item) && !(await claimed(item, deps))) return void sent.push({ item });
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
      // The last attempt, and the first after an operator's redrive, are sent whatever the circuit says.
      const forced =
        budgetAttemptOf(item) > backoff.length ||
        (item.msg.redriven_after !== undefined && budgetAttemptOf(item) === 1);
      sent.push({ item, attempt: await attemptWithCircuit(item, forced, checks, deps) });
    },
  );
  await record(sent, deps);

  const requeue: { item: Item; body: WebhookMessage; delaySeconds: number }[] = [];
  const dead: { item: Item; body: WebhookMessage }[] = [];
  for (const s of sent) {
    if (s.attempt?.outcome !== 'failed') continue;
    const made = attemptOf(s.item);
    if (budgetAttemptOf(s.item) > backoff.length) {
      dead.push({ item: s.item, body: { ...s.item.msg, attempts_before: made } });
      continue;
    }
    const seconds = retryDelaySeconds(budgetAttemptOf(s.item), backoff);
    requeue.push({ item: s.item, ...delayedRetry({ ...s.item.msg, attempts_before: made }, seconds, now) });
  }
  for (const item of deferred)
    requeue.push({ item, ...delayedRetry({ ...item.msg, deferred: true }, backoff[0] ?? 0, now) });
  for (const item of waiting) requeue.push({ item, body: item.msg, ...stillWaiting(item.msg, now) });
  // Used up before this receive tried it: the attempts it made are those before it.
  for (const item of exhausted)
    dead.push({ item, body: { ...item.msg, attempts_before: attemptOf(item) - 1 } });

  // An event goes to the dead-letter queue once (between redrives): a copy of the message that put it
  // there, received again however often (its attempts look used up before it tried), finds the mark.
  const deadOnce = await notDeadLettered(dead, deps);

  // What could not be queued comes back (a bundle whole; its delivered events are in the log): for a
  // producer's first attempt, the producer runs again (deliverNow).
  const back: Item[] = [];
  const unqueued = await queueRetries('webhook', requeue, deadOnce, deps);
  for (const { item } of unqueued) back.push(...(copies.get(item.msg.event_id) ?? [item]));
  const moved = deadOnce.filter((d) => !unqueued.includes(d));
  if (moved.length > 0)
    logger.warn('webhook events moved to the dead-letter queue after their attempts', {
      eventIds: moved.map((d) => d.item.msg.event_id),
    });
  return { sent, back, late };
}

/** The dead letters whose event no copy of their message has put in the dead-letter queue yet. */
async function notDeadLettered<D extends { item: Item; body: WebhookMessage }>(
  dead: D[],
  deps: DeliveryDeps,
): Promise<D[]> {
  const found = await Promise.all(
    dead.map((d) =>
      deps.wasDeadLettered(d.item.msg.event_id, d.item.msg.redriven_after ?? 0).catch((err) => {
        // Unknown: put it there (at least once).
        logger.warn('could not read a webhook dead-letter mark', {
          eventId: d.item.msg.event_id,
          error: err as Error,
        });
        return false;
      }),
    ),
  );
  return dead.filter((_, i) => !found[i]);
}

/** Whether this copy of a retry's message takes its attempt; when that cannot be written, it does (at least once). */
async function claimed(item: Item, deps: DeliveryDeps): Promise<boolean> {
  try {
    return await deps.claimRetry(item.msg.event_id, attemptOf(item));
  } catch (err) {
    logger.warn('could not claim a webhook retry', { eventId: item.msg.event_id, error: err as Error });
    return true;
  }
}

/**
 * One attempt, unless the task's circuit is open (circuit.ts): then only the probe is sent, and the
 * others are recorded as failed attempts without a request. A `forced` attempt is always sent: an
 * event's last (none reaches the dead-letter queue without its receiver's own answer as the last
 * reason), and the first after a redrive (an operator's "try again now").
 */
async function attemptWithCircuit(
  item: Item,
  forced: boolean,
  checks: Map<string, Promise<UrlCheck>>,
  deps: DeliveryDeps,
): Promise<WebhookAttempt> {
  const taskId = item.msg.task_id;
  if (!forced && admit(taskId, Date.now()) === 'hold') return heldAttempt(item);
  const attempt = await attemptOne(item, checks, deps);
  noteAttempt(
    taskId,
    {
      delivered: attempt.outcome === 'delivered',
      reached: attempt.outcome === 'failed' && attempt.target !== undefined,
    },
    Date.now(),
  );
  return attempt;
}
