import { nowMs } from '../../clock.ts';
import type { WebhookBundle, WebhookMessage } from '../../contracts/messages.ts';
import type { RetryQueues } from '../../messaging/retry-queues.ts';
import { publish } from '../../messaging/sqs.ts';
import { outboundRequest } from '../../outbound/client.ts';
import { checkOutboundUrl, type UrlCheck } from '../../outbound/url-guard.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import type { Task } from '../tasks/model.ts';
import {
  claimRetry,
  listAttemptsOfEvent,
  markDeadLettered,
  putDeliveryLogs,
  putWebhookAttempts,
  wasDeadLettered,
  type WebhookAttempt,
} from './repository.ts';

/** The I/O of webhook delivery in one object, so a test can run it against its own. */

export interface PostResult {
  status?: number;
  error?: string;
  /** The connection would have reached a blocked address (DNS changed since the check). */
  blocked?: boolean;
}

/** Its retries and deferred replays (each a delayed message), and its dead letters: the webhook queues. */
export interface DeliveryDeps extends RetryQueues<WebhookMessage> {
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
  /** Takes attempt `attempt` of a retried event; false when a copy of its message took it. */
  claimRetry: (eventId: string, attempt: number) => Promise<boolean>;
  /** Whether the event was put in the dead-letter queue after an attempt later than `since` (its last redrive's). */
  wasDeadLettered: (eventId: string, since: number) => Promise<boolean>;
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
}

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
  claimRetry: (eventId, attempt) => claimRetry(eventId, attempt, Math.floor(nowMs() / 1000)),
  wasDeadLettered,
  markDeadLettered: (events) =>
    markDeadLettered(
      events.map((e) => ({ eventId: e.event_id, attempt: e.attempts_before ?? 0 })),
      Math.floor(nowMs() / 1000),
    ),
  deadLetter: (messages) =>
    publish(
      'webhook-dlq',
      messages.map((body) => ({ body })),
    ),
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
};
