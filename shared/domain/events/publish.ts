import { randomUUID } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import type { WebhookBody, WebhookBundle, WebhookEvent } from '../../contracts/messages.ts';
import { publish } from '../../messaging/sqs.ts';

export interface EventToPublish {
  body: WebhookBody;
  /**
   * Deterministic when the producer may run twice (e.g. `<task>:<alarm uuid>:ALARM`), so a redelivered
   * producer sends the same `webhook-id` again and receivers can de-duplicate on it.
   */
  eventId?: string;
  /** The event may have been delivered since this time (ms): a producer's replay (see the deliverer). */
  replaySinceMs?: number;
}

/**
 * What orders an event among its task's events (API guide §12.6): a workflow's events go in
 * order, and so do the events of one compression metric; everything else may go in parallel.
 */
export function orderKeyOf(body: WebhookBody): string | undefined {
  const data = body.data as { workflow?: { id?: unknown }; history?: { metric?: unknown } };
  if (body.event === 'WORKFLOW' && data.workflow?.id !== undefined) return `wf:${data.workflow.id}`;
  const metric = data.history?.metric;
  return typeof metric === 'string' && metric !== '' ? `m:${metric}` : undefined;
}

/** Bytes of events one bundle carries at most: far below the queue's message size. */
const BUNDLE_MAX_BYTES = 200_000;

/**
 * The webhook queue messages of a task's events: one bundle (several when the events are large),
 * so a pipeline batch or a workflow operation costs one message per task.
 */
export function webhookBundles(taskId: number, events: EventToPublish[]): WebhookBundle[] {
  return packBundles(
    taskId,
    nowSeconds(),
    events.map((e) => {
      const order_key = orderKeyOf(e.body);
      return {
        event_id: e.eventId ?? randomUUID(),
        ...(order_key ? { order_key } : {}),
        ...(e.replaySinceMs !== undefined ? { replay_since_ms: e.replaySinceMs } : {}),
        body: e.body,
      };
    }),
  );
}

/** A task's events packed, in their order, into bundles of at most BUNDLE_MAX_BYTES of bodies each. */
export function packBundles(taskId: number, created_at: number, events: WebhookEvent[]): WebhookBundle[] {
  const bundles: WebhookBundle[] = [];
  let current: WebhookEvent[] = [];
  let bytes = 0;
  for (const entry of events) {
    const size = Buffer.byteLength(JSON.stringify(entry.body)) + 200;
    if (current.length > 0 && bytes + size > BUNDLE_MAX_BYTES) {
      bundles.push({ kind: 'webhooks', task_id: taskId, created_at, events: current });
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) bundles.push({ kind: 'webhooks', task_id: taskId, created_at, events: current });
  return bundles;
}

/** Puts events for a task's webhook on the webhook queue. */
export async function publishWebhookEvents(taskId: number, events: EventToPublish[]): Promise<void> {
  if (events.length === 0) return;
  await publish(
    'webhook',
    webhookBundles(taskId, events).map((m) => ({ body: m })),
  );
}
