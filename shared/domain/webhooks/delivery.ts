import { parseJson } from '../../json.ts';
import { performance } from 'node:perf_hooks';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { nowMs, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { logger } from '../../log.ts';
import { outboundRequest } from '../../outbound/client.ts';
import { checkOutboundUrl, type UrlCheck } from '../../outbound/url-guard.ts';
import type { WebhookMessage } from '../../messaging/messages.ts';
import { queueUrl, sqs } from '../../messaging/sqs.ts';
import { getTaskCached } from '../alarms/task-cache.ts';
import type { Task } from '../tasks/model.ts';
import {
  type AttemptOutcome,
  type ClaimResult,
  claimWebhookEvent,
  putWebhookAttempt,
  releaseWebhookEvent,
  type WebhookAttempt,
} from './repository.ts';
import { signWebhook } from './signature.ts';

/**
 * Outbound webhook delivery (behavior 11, interface 6.1): the consumer of the webhook queue.
 *
 * Each message is one event for one task. The event is POSTed (exactly its stored body) to the task's
 * webhook URL with the Standard Webhooks headers; only HTTP 200 within the timeout is a success.
 * Every attempt is recorded. A failure is reported back to SQS (partial batch response) after the
 * message's visibility is set to the backoff of that attempt (5 s, 30 s, 2 min, 10 min, 30 min, 1 h);
 * after the last retry the message becomes visible at once, and the queue's redrive policy moves it
 * to the dead-letter queue on its next receive. Events of one task are sent in order within a batch.
 *
 * Idempotency: an event is claimed before each send (a conditional write on the event's claim item),
 * so duplicate messages of one event never send it twice at once, nor again once it was delivered.
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
  /** Claims the event for one send (see repository.claimWebhookEvent). */
  claim: (eventId: string, taskId: number, nowMs: number, leaseMs: number) => Promise<ClaimResult>;
  release: (eventId: string, delivered: boolean, nowMs: number) => Promise<void>;
  recordAttempt: (attempt: WebhookAttempt) => Promise<void>;
  checkUrl: (url: string, blockPrivate: boolean) => Promise<UrlCheck>;
  post: (
    url: URL,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
    blockPrivate: boolean,
  ) => Promise<PostResult>;
  /** Sets when a failed message is received again. */
  delayRetry: (receiptHandle: string, seconds: number) => Promise<void>;
}

/** How many tasks' events are delivered at once. */
const TASK_CONCURRENCY = 4;

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
  claim: claimWebhookEvent,
  release: releaseWebhookEvent,
  recordAttempt: putWebhookAttempt,
  checkUrl: (url, blockPrivate) => checkOutboundUrl(url, blockPrivate),
  post: postJson,
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

function webhookUrlOf(task: Task): string | undefined {
  const w = task.receiver?.channels?.webhook as string | { url?: string } | undefined;
  const url = typeof w === 'string' ? w : w?.url;
  return url || undefined;
}

function parseMessage(body: string): WebhookMessage | undefined {
  try {
    const m = parseJson(body) as WebhookMessage;
    if (m && typeof m.event_id === 'string' && m.event_id && Number.isSafeInteger(m.task_id) && m.body)
      return m;
  } catch {
    // fall through
  }
  return undefined;
}

type Verdict = 'ack' | 'retry';

/** A claim outlives the send by this much (task read, URL check, recording). */
const CLAIM_MARGIN_MS = 15_000;

async function deliverOne(record: DeliveryRecord, msg: WebhookMessage, deps: DeliveryDeps): Promise<Verdict> {
  const cfg = config();
  const startedAtMs = nowMs();
  // Delivered already: this message can go. Leased: a duplicate is being sent right now, or this
  // message's own earlier attempt failed and could not free its claim; either way the event is not
  // delivered yet, so this message comes back after its backoff (acknowledging it could lose the event).
  const claim = await deps.claim(
    msg.event_id,
    msg.task_id,
    startedAtMs,
    cfg.webhookTimeoutMs + CLAIM_MARGIN_MS,
  );
  if (!claim.claimed) return claim.delivered ? 'ack' : 'retry';
  let outcome: AttemptOutcome = 'failed';
  try {
    outcome = await attempt(record, msg, claim.seq, startedAtMs, deps);
  } finally {
    await deps.release(msg.event_id, outcome === 'delivered', nowMs()).catch((err) => {
      logger.warn('could not release a webhook claim', { eventId: msg.event_id, error: err as Error });
    });
  }
  return outcome === 'failed' ? 'retry' : 'ack';
}

/** One attempt of a claimed event: task, URL check, POST, record. */
async function attempt(
  record: DeliveryRecord,
  msg: WebhookMessage,
  seq: number,
  startedAtMs: number,
  deps: DeliveryDeps,
): Promise<AttemptOutcome> {
  const cfg = config();
  const base = {
    event_id: msg.event_id,
    task_id: msg.task_id,
    seq,
    attempt: Math.max(1, record.receiveCount || 1),
    event: msg.body.event,
    type: msg.body.type,
    at_ms: startedAtMs,
    at: Math.floor(startedAtMs / 1000),
  };
  const done = async (a: Omit<WebhookAttempt, keyof typeof base>): Promise<AttemptOutcome> => {
    try {
      await deps.recordAttempt({ ...base, ...a });
    } catch (err) {
      logger.error('could not record a webhook attempt', { eventId: msg.event_id, error: err as Error });
    }
    return a.outcome;
  };

  // A PING announces a (new) URL: read the task as it was after the event was created.
  const task = await deps.getTask(msg.task_id, msg.body.event === 'PING' ? msg.created_at : undefined);
  if (!task) return done({ outcome: 'skipped', error: 'task not found', duration_ms: 0 });
  const url = webhookUrlOf(task);
  if (!url) return done({ outcome: 'skipped', error: 'task has no webhook', duration_ms: 0 });
  const check = await deps.checkUrl(url, cfg.blockPrivateWebhooks);
  if (!check.ok) return done({ outcome: 'refused', error: check.reason, duration_ms: 0 });

  const body = JSON.stringify(msg.body);
  const timestamp = nowSeconds();
  const headers = {
    'content-type': 'application/json',
    'user-agent': `svc/${cfg.serviceVersion}`,
    'webhook-id': msg.event_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(task.secret, msg.event_id, timestamp, body),
  };
  const started = performance.now();
  const res = await deps.post(check.url, headers, body, cfg.webhookTimeoutMs, cfg.blockPrivateWebhooks);
  const duration_ms = Math.round(performance.now() - started);
  const outcome: AttemptOutcome = res.status === 200 ? 'delivered' : res.blocked ? 'refused' : 'failed';
  return done({
    outcome,
    target: check.url.origin,
    duration_ms,
    ...(res.status !== undefined ? { status: res.status } : {}),
    ...(outcome !== 'delivered' ? { error: res.error ?? `HTTP ${res.status}` } : {}),
  });
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(workers);
}

/** Delivers a batch of webhook messages; returns the ids SQS must deliver again. */
export async function deliverWebhooks(
  records: DeliveryRecord[],
  deps: DeliveryDeps = defaultDeliveryDeps,
): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> {
  const failures: string[] = [];
  const byTask = new Map<number, { record: DeliveryRecord; msg: WebhookMessage }[]>();
  for (const record of records) {
    const msg = parseMessage(record.body);
    if (!msg) {
      // Cannot succeed: leave it to the redrive policy, which parks it in the dead-letter queue.
      logger.error('malformed webhook message', { messageId: record.messageId });
      failures.push(record.messageId);
      continue;
    }
    const list = byTask.get(msg.task_id) ?? [];
    list.push({ record, msg });
    byTask.set(msg.task_id, list);
  }

  const backoff = config().webhookBackoffSeconds;
  await pool([...byTask.values()], TASK_CONCURRENCY, async (list) => {
    for (const { record, msg } of list) {
      let verdict: Verdict;
      try {
        verdict = await deliverOne(record, msg, deps);
      } catch (err) {
        logger.error('webhook delivery failed', { eventId: msg.event_id, error: err as Error });
        verdict = 'retry';
      }
      if (verdict === 'ack') continue;
      failures.push(record.messageId);
      try {
        await deps.delayRetry(record.receiptHandle, retryDelaySeconds(record.receiveCount, backoff));
      } catch (err) {
        logger.warn('could not set the webhook retry delay', { eventId: msg.event_id, error: err as Error });
      }
    }
  });
  return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
}
