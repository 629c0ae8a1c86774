import { performance } from 'node:perf_hooks';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { nowMs } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { parseJson } from '../../json.ts';
import { logger } from '../../log.ts';
import { count, webhookLatency } from '../../metrics.ts';
import type { WebhookBundle, WebhookEvent, WebhookMessage } from '../../messaging/messages.ts';
import { publish, queueUrl, sqs } from '../../messaging/sqs.ts';
import { outboundRequest } from '../../outbound/client.ts';
import { checkOutboundUrl, type UrlCheck } from '../../outbound/url-guard.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import type { Task } from '../tasks/model.ts';
import {
  type AttemptOutcome,
  listAttemptsOfEvent,
  putDeliveryLogs,
  putWebhookAttempts,
  type WebhookAttempt,
} from './repository.ts';
import { packBundles } from '../events/publish.ts';
import { signWebhook } from './signature.ts';

/**
 * Outbound webhook delivery (behavior 11, interface 6.1): the consumer of the webhook queue, and the
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
export interface DeliveryRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** ApproximateReceiveCount: the attempt number. */
  receiveCount: number;
}

export interface PostResult {
  status?: number;
  error?: string;
  /** The connection would have reached a blocked address (DNS changed since the check). */
  blocked?: boolean;
}

export interface DeliveryDeps {
  /** `notOlderThan`: the task must have been read after that second (see task-cache). */
  getTask: (id: number, notOlderThan?: number) => Promise<Task | undefined>;
  checkUrl: (url: string, blockPrivate: boolean) => Promise<UrlCheck>;
  post: (
    url: URL,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
    blockPrivate: boolean,
  ) => Promise<PostResult>;
  /** Attempts recorded each as an item of its own (failures, retries). */
  recordAttempts: (attempts: WebhookAttempt[]) => Promise<void>;
  /** Settling first attempts of a batch, recorded as one delivery log item per task. */
  logDeliveries: (attempts: WebhookAttempt[]) => Promise<void>;
  /** Queues events of a bundle again, each a message of its own (retries, deferred replays). */
  requeue: (messages: { body: WebhookMessage; delaySeconds: number }[]) => Promise<void>;
  /** Queues a producer's events as they are, for the webhook consumer (deliverNow). */
  queueBundles: (bundles: WebhookBundle[]) => Promise<void>;
  /**
   * Whether the event was delivered at or after `sinceMs`: by an attempt of its own, or (`searchLog`,
   * for a producer's replay) also by a first attempt in the task's delivery log; and the highest
   * attempt number recorded for it since then (0 for none).
   */
  pastAttempts: (
    eventId: string,
    taskId: number,
    sinceMs: number,
    searchLog: boolean,
  ) => Promise<{ delivered: boolean; last: number }>;
  /** Sets when a failed message is received again. */
  delayRetry: (receiptHandle: string, seconds: number) => Promise<void>;
}

/** How many sends of one batch are in flight at once (one receiver that takes 50 ms still gets 200/s per poller). */
const SEND_CONCURRENCY = 16;

/**
 * POSTs a body through the outbound client (hard timeout, keep-alive, URL guard when `blockPrivate`);
 * never throws. Redirects are not followed (a 3xx is a failure). The status is the answer: the
 * response body is discarded.
 */
export async function postJson(
  url: URL,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  blockPrivate: boolean,
): Promise<PostResult> {
  const res = await outboundRequest(url, { method: 'POST', headers, body, timeoutMs, guard: blockPrivate });
  if (res.ok) return { status: res.status };
  return res.failure === 'blocked' ? { blocked: true, error: res.error } : { error: res.error };
}

export const defaultDeliveryDeps: DeliveryDeps = {
  getTask: (id, notOlderThan) => getTaskCached(id, { notOlderThan }),
  checkUrl: (url, blockPrivate) => checkOutboundUrl(url, blockPrivate),
  post: postJson,
  recordAttempts: putWebhookAttempts,
  logDeliveries: putDeliveryLogs,
  requeue: (messages) => publish('webhook', messages),
  queueBundles: (bundles) =>
    publish(
      'webhook',
      bundles.map((body) => ({ body })),
    ),
  pastAttempts: async (eventId, taskId, sinceMs, searchLog) => {
    const attempts = (
      await listAttemptsOfEvent(
        eventId,
        searchLog ? { taskId, fromMs: sinceMs, toMs: nowMs() + 60_000 } : undefined,
      )
    ).filter((a) => a.at_ms >= sinceMs);
    return {
      delivered: attempts.some((a) => a.outcome === 'delivered'),
      last: Math.max(0, ...attempts.map((a) => a.attempt)),
    };
  },
  delayRetry: async (receiptHandle, seconds) => {
    await sqs().send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl('webhook'),
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  },
};

/** Visibility after a failed attempt: the backoff of that retry; 0 once the retries are used up. */
export function retryDelaySeconds(attempt: number, backoff: number[]): number {
  if (backoff.length === 0 || attempt > backoff.length) return 0;
  return Math.min(43_200, Math.max(0, Math.round(backoff[Math.max(0, attempt - 1)])));
}

/** The task's webhook URL, if it has one. */
export function webhookUrlOf(task: Task): string | undefined {
  const w = task.receiver?.channels?.webhook as string | { url?: string } | undefined;
  const url = typeof w === 'string' ? w : w?.url;
  return url || undefined;
}

const validEvent = (e: Partial<WebhookMessage> | undefined): boolean =>
  !!e && typeof e.event_id === 'string' && e.event_id !== '' && !!e.body && typeof e.body === 'object';

interface Item {
  record: DeliveryRecord;
  msg: WebhookMessage;
  /** One of the events of a bundle (its retries go out as messages of their own). */
  bundled: boolean;
}

/** The items of a bundle's events, each received in `recordOf(event)`. */
const itemsOfBundle = (
  b: WebhookBundle,
  events: WebhookEvent[],
  recordOf: (e: WebhookEvent) => DeliveryRecord,
): Item[] =>
  events.map((e) => ({
    record: recordOf(e),
    bundled: true,
    msg: { ...e, kind: 'webhook', task_id: b.task_id, created_at: b.created_at },
  }));

/** The record of an event sent outside the queue (it was never received: its first attempt). */
const unqueued = (eventId: string): DeliveryRecord => ({
  messageId: eventId,
  receiptHandle: '',
  body: '',
  receiveCount: 1,
});

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

interface Sent {
  item: Item;
  /** Undefined when the event turned out to be delivered already (a replay). */
  attempt?: WebhookAttempt;
}

/** The attempt a receive of this item makes (1 for the first). */
const attemptOf = ({ record, msg }: Item) =>
  (msg.attempts_before ?? 0) + Math.max(1, record.receiveCount || 1);

/** The attempt within the retry budget: an event redriven from the dead-letter queue starts it again. */
const budgetAttemptOf = (item: Item) => attemptOf(item) - (item.msg.redriven_after ?? 0);

/**
 * A message that may carry an event delivered before: a producer's replay, or a message received
 * again (an earlier receive may have delivered it, then lost the acknowledgement). Since when to look.
 */
function replaySince({ record, msg }: Item): number | undefined {
  if (msg.replay_since_ms !== undefined) return msg.replay_since_ms;
  return record.receiveCount > 1 ? msg.created_at * 1000 - 1000 : undefined;
}

/** One attempt of one event: task, URL check (once per URL and batch), POST. Never throws. */
async function attemptOne(
  item: Item,
  checks: Map<string, Promise<UrlCheck>>,
  deps: DeliveryDeps,
): Promise<WebhookAttempt> {
  const { msg } = item;
  const cfg = config();
  const startedAtMs = nowMs();
  const base = {
    event_id: msg.event_id,
    task_id: msg.task_id,
    attempt: attemptOf(item),
    event: msg.body.event,
    type: msg.body.type,
    at_ms: startedAtMs,
    at: Math.floor(startedAtMs / 1000),
  };
  const done = (a: Omit<WebhookAttempt, keyof typeof base>): WebhookAttempt => ({ ...base, ...a });
  try {
    // A PING announces a (new) URL: read the task as it was after the event was created.
    const task = await deps.getTask(msg.task_id, msg.body.event === 'PING' ? msg.created_at : undefined);
    if (!task) return done({ outcome: 'skipped', error: 'task not found', duration_ms: 0 });
    const url = webhookUrlOf(task);
    if (!url) return done({ outcome: 'skipped', error: 'task has no webhook', duration_ms: 0 });
    let check = checks.get(url);
    if (!check) {
      check = deps.checkUrl(url, cfg.blockPrivateWebhooks);
      checks.set(url, check);
    }
    const checked = await check;
    if (!checked.ok) return done({ outcome: 'refused', error: checked.reason, duration_ms: 0 });

    const body = JSON.stringify(msg.body);
    // Real time, not the service clock (which the local test clock moves): receivers check it
    // against their own clock to refuse replays.
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': `svc/${cfg.serviceVersion}`,
      'webhook-id': msg.event_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(task.secret, msg.event_id, timestamp, body),
    };
    const started = performance.now();
    const res = await deps.post(checked.url, headers, body, cfg.webhookTimeoutMs, cfg.blockPrivateWebhooks);
    const duration_ms = Math.round(performance.now() - started);
    const outcome: AttemptOutcome = res.status === 200 ? 'delivered' : res.blocked ? 'refused' : 'failed';
    return done({
      outcome,
      target: checked.url.origin,
      duration_ms,
      ...(res.status !== undefined ? { status: res.status } : {}),
      ...(outcome !== 'delivered' ? { error: res.error ?? `HTTP ${res.status}` } : {}),
    });
  } catch (err) {
    // The task could not be read (throttling, ...): a failed attempt, retried after its backoff.
    logger.error('webhook delivery failed', { eventId: msg.event_id, error: err as Error });
    return done({
      outcome: 'failed',
      error: 'internal error',
      duration_ms: Math.round(nowMs() - startedAtMs),
    });
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

const SETTLED: AttemptOutcome[] = ['delivered', 'skipped', 'refused'];

/** Records the attempts of a batch: the settling first attempts in the delivery log, the rest one by one. */
async function record(sent: Sent[], deps: DeliveryDeps): Promise<void> {
  const own: WebhookAttempt[] = [];
  const logged: WebhookAttempt[] = [];
  for (const { attempt } of sent) {
    if (!attempt) continue;
    count('WebhookDelivery', { outcome: attempt.outcome });
    if (attempt.duration_ms > 0) webhookLatency(attempt.duration_ms);
    if (attempt.attempt === 1 && SETTLED.includes(attempt.outcome)) logged.push(attempt);
    else own.push(attempt);
  }
  const results = await Promise.allSettled([
    own.length > 0 ? deps.recordAttempts(own) : undefined,
    logged.length > 0 ? deps.logDeliveries(logged) : undefined,
  ]);
  for (const r of results) {
    if (r.status === 'rejected')
      logger.error('could not record webhook attempts', { count: sent.length, error: r.reason as Error });
  }
}

/**
 * Whether a replayed event was delivered already; when that cannot be read, it is sent (at least
 * once). An event not delivered continues the attempts recorded for it since `since`: a producer's
 * replay after a first attempt that failed (and whose retry could not be queued) makes attempt 2 with
 * its backoff, not a second attempt 1 with a fresh retry budget.
 */
async function wasDelivered(item: Item, since: number, deps: DeliveryDeps): Promise<boolean> {
  const { msg, bundled } = item;
  // A retried one-event message looks at the event's own attempts only (one small Query): its first
  // receive failed, or it would not be back. A replay, and a bundle received again (its delivered
  // events are in the log), also search the task's delivery log.
  try {
    const past = await deps.pastAttempts(
      msg.event_id,
      msg.task_id,
      since,
      msg.replay_since_ms !== undefined || bundled,
    );
    // Only on a message's first receive: later receives count on from there (two live copies of one
    // event would otherwise push each other's count along, and run their retries twice as fast).
    const behind = past.last + 1 - attemptOf(item);
    if (!past.delivered && behind > 0 && item.record.receiveCount <= 1)
      item.msg = { ...msg, attempts_before: (msg.attempts_before ?? 0) + behind };
    return past.delivered;
  } catch (err) {
    logger.warn('could not read whether a webhook event was delivered', {
      eventId: msg.event_id,
      error: err as Error,
    });
    return false;
  }
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
async function deliverItems(
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

/**
 * Tasks whose webhook failed a first attempt made by a producer (deliverNow) lately, until when
 * (ms, this container's clock): their events take the queue meanwhile, so a receiver that is down
 * costs its producers the timeouts of one batch per container and cool-off, not of every batch.
 */
const coolingOff = new Map<number, number>();
const COOL_OFF_MS = 30_000;
/** How long a producer's first attempts may hold it up: events not started by then are queued. */
const FIRST_ATTEMPT_BUDGET_MS = 1_000;

function isCoolingOff(taskId: number, now: number): boolean {
  const until = coolingOff.get(taskId);
  if (until === undefined) return false;
  if (until > now) return true;
  coolingOff.delete(taskId);
  return false;
}

/** A producer's events, regrouped per task (in their order) into bundles of a queue message's size. */
function bundlesOf(items: Item[]): WebhookBundle[] {
  const byTask = new Map<number, { created_at: number; events: WebhookEvent[] }>();
  for (const { msg } of items) {
    const { kind: _k, task_id, created_at, ...event } = msg;
    const group = byTask.get(task_id) ?? { created_at, events: [] };
    group.events.push(event);
    byTask.set(task_id, group);
  }
  return [...byTask].flatMap(([taskId, g]) => packBundles(taskId, g.created_at, g.events));
}

/**
 * The first attempt of a producer's events, made by the producer itself (the alarm consumer, for its
 * batch): the queue carries only what failed, each event a message of its own delayed by the first
 * backoff, so the common case costs no queue hop. Exactly the attempt the webhook consumer makes
 * (task read, URL guard, signature), recorded through `deps` (the settling ones by `logDeliveries`,
 * which a producer may collect to write with its own log). Queued as they are, for the webhook
 * consumer: replays (they may have gone out before: the consumer looks that up), the events of a task
 * whose webhook failed here within COOL_OFF_MS, and those not started within FIRST_ATTEMPT_BUDGET_MS.
 * Resolves once every event was delivered, settled or durably queued; otherwise throws once nothing
 * is in flight any more, and the producer runs again (its events then go out as replays).
 */
export async function deliverNow(
  bundles: WebhookBundle[],
  deps: DeliveryDeps = defaultDeliveryDeps,
): Promise<void> {
  const now: Item[] = [];
  const queued: WebhookBundle[] = [];
  const t = Date.now();
  for (const bundle of bundles) {
    const cooling = isCoolingOff(bundle.task_id, t);
    const later = bundle.events.filter((e) => cooling || e.replay_since_ms !== undefined);
    if (later.length > 0) queued.push({ ...bundle, events: later });
    const fresh = bundle.events.filter((e) => !later.includes(e));
    now.push(...itemsOfBundle(bundle, fresh, (e) => unqueued(e.event_id)));
  }
  const [delivery, queuing] = await Promise.allSettled([
    deliverItems(now, deps, performance.now() + FIRST_ATTEMPT_BUDGET_MS),
    queued.length > 0 ? deps.queueBundles(queued) : undefined,
  ]);
  if (delivery.status === 'rejected') throw delivery.reason;
  const { sent, back, late } = delivery.value;
  for (const { item, attempt } of sent) {
    // The receiver failed (an answer, a timeout, the network), not this container (a task read).
    if (attempt?.outcome === 'failed' && attempt.target !== undefined)
      coolingOff.set(item.msg.task_id, Date.now() + COOL_OFF_MS);
  }
  if (late.length > 0) await deps.queueBundles(bundlesOf(late));
  if (queuing.status === 'rejected') throw queuing.reason;
  if (back.length > 0) throw new Error(`could not queue the retries of ${back.length} webhook events`);
}

/**
 * Sends one event now, outside the queue (an operator's test-send, `POST /alarmtask/webhook/test`):
 * the same attempt a queued event makes (the task read, the URL guard, the Standard Webhooks
 * signature, the outbound client) recorded like any first attempt. It is not retried: the attempt is
 * the answer.
 */
export async function sendEventNow(
  msg: WebhookMessage,
  deps: DeliveryDeps = defaultDeliveryDeps,
): Promise<WebhookAttempt> {
  const item: Item = { record: unqueued(msg.event_id), msg, bundled: false };
  const attempt = await attemptOne(item, new Map(), deps);
  await record([{ item, attempt }], deps);
  return attempt;
}
