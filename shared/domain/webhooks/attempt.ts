import { keysOf } from '../tasks/credentials.ts';
import { performance } from 'node:perf_hooks';
import { nowMs, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { logDelivery, logger } from '../../log.ts';
import { count, webhookLatency } from '../../metrics.ts';
import type { WebhookBundle, WebhookEvent, WebhookMessage } from '../../contracts/messages.ts';
import type { UrlCheck } from '../../outbound/url-guard.ts';
import type { Task } from '../tasks/model.ts';
import type { AttemptOutcome, WebhookAttempt } from './repository.ts';
import { signWebhook } from './signature.ts';
import type { DeliveryDeps } from './delivery-deps.ts';

/**
 * One attempt of one event (the task read, the URL guard, the Standard Webhooks signature, the POST),
 * the bookkeeping of a batch's attempts, and whether a replayed event was delivered already.
 */

/** The task's webhook URL, if it has one. */
export function webhookUrlOf(task: Task): string | undefined {
  const w = task.receiver?.channels?.webhook as string | { url?: string } | undefined;
  const url = typeof w === 'string' ? w : w?.url;
  return url || undefined;
}

/** A message of the webhook queue as its consumer receives it. */
export interface DeliveryRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** ApproximateReceiveCount: the attempt number. */
  receiveCount: number;
}

export interface Item {
  record: DeliveryRecord;
  msg: WebhookMessage;
  /** One of the events of a bundle (its retries go out as messages of their own). */
  bundled: boolean;
}

/** The items of a bundle's events, each received in `recordOf(event)`. */
export const itemsOfBundle = (
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
export const unqueued = (eventId: string): DeliveryRecord => ({
  messageId: eventId,
  receiptHandle: '',
  body: '',
  receiveCount: 1,
});

export interface Sent {
  item: Item;
  /** Undefined when the event turned out to be delivered already (a replay). */
  attempt?: WebhookAttempt;
}

/** The attempt a receive of this item makes (1 for the first). */
export const attemptOf = ({ record, msg }: Item) =>
  (msg.attempts_before ?? 0) + Math.max(1, record.receiveCount || 1);

/** The attempt within the retry budget: an event redriven from the dead-letter queue starts it again. */
export const budgetAttemptOf = (item: Item) => attemptOf(item) - (item.msg.redriven_after ?? 0);

/**
 * A message that may carry an event delivered before: a producer's replay, or a message received
 * again (an earlier receive may have delivered it, then lost the acknowledgement). Since when to look.
 */
export function replaySince({ record, msg }: Item): number | undefined {
  if (msg.replay_since_ms !== undefined) return msg.replay_since_ms;
  return record.receiveCount > 1 ? msg.created_at * 1000 - 1000 : undefined;
}

/**
 * An attempt after the first: SQS may hand out a message twice (at once, or again after a delete it
 * lost), and two receives must not each make the attempt and queue the next, so it is claimed first
 * (delivery.ts). Both copies, and a retry with the message it came from, count to the same number.
 */
export const isRetry = (item: Item) => attemptOf(item) > 1 && !item.msg.deferred;

/** One attempt of one event: task, URL check (once per URL and batch), POST. Never throws. */
export async function attemptOne(
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
      // During a secret rotation's overlap, signed with the new secret and the old one (Standard
      // Webhooks' space-separated list): a receiver still holding the old secret keeps verifying.
      'webhook-signature': keysOf(task, 'secret', nowSeconds())
        .map((secret) => signWebhook(secret, msg.event_id, timestamp, body))
        .join(' '),
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
 * The attempt of an event held by its task's open circuit (circuit.ts): counted as failed without a
 * request (its receiver failed the attempts just before), retried after its backoff as any failure.
 */
export function heldAttempt(item: Item): WebhookAttempt {
  const at_ms = nowMs();
  return {
    event_id: item.msg.event_id,
    task_id: item.msg.task_id,
    attempt: attemptOf(item),
    event: item.msg.body.event,
    type: item.msg.body.type,
    at_ms,
    at: Math.floor(at_ms / 1000),
    outcome: 'failed',
    error: 'circuit open: the receiver failed the attempts just before; not sent',
    duration_ms: 0,
  };
}

const SETTLED: AttemptOutcome[] = ['delivered', 'skipped', 'refused'];

/** Records the attempts of a batch: the settling first attempts in the delivery log, the rest one by one. */
export async function record(sent: Sent[], deps: DeliveryDeps): Promise<void> {
  const own: WebhookAttempt[] = [];
  const logged: WebhookAttempt[] = [];
  for (const { attempt } of sent) {
    if (!attempt) continue;
    count('WebhookDelivery', { outcome: attempt.outcome });
    logDelivery({
      channel: 'webhook',
      target: attempt.target ?? '',
      outcome: attempt.outcome,
      code: attempt.status !== undefined ? `HTTP ${attempt.status}` : attempt.error,
      id: attempt.event_id,
      attempt: attempt.attempt,
    });
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
export async function wasDelivered(item: Item, since: number, deps: DeliveryDeps): Promise<boolean> {
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
