import { randomUUID } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import type { WebhookBody, WebhookMessage } from '../../messaging/messages.ts';
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
 * What orders an event among its task's events (README, "Ordering"): a workflow's events go in
 * order, and so do the events of one compression metric; everything else may go in parallel.
 */
export function orderKeyOf(body: WebhookBody): string | undefined {
  const data = body.data as { workflow?: { id?: unknown }; history?: { metric?: unknown } };
  if (body.event === 'WORKFLOW' && data.workflow?.id !== undefined) return `wf:${data.workflow.id}`;
  const metric = data.history?.metric;
  return typeof metric === 'string' && metric !== '' ? `m:${metric}` : undefined;
}

/** The webhook queue messages of a task's events. */
export function webhookMessages(taskId: number, events: EventToPublish[]): WebhookMessage[] {
  const created_at = nowSeconds();
  return events.map((e) => {
    const order_key = orderKeyOf(e.body);
    return {
      kind: 'webhook',
      event_id: e.eventId ?? randomUUID(),
      task_id: taskId,
      created_at,
      ...(order_key ? { order_key } : {}),
      ...(e.replaySinceMs !== undefined ? { replay_since_ms: e.replaySinceMs } : {}),
      body: e.body,
    };
  });
}

/** Puts events for a task's webhook on the webhook queue. */
export async function publishWebhookEvents(taskId: number, events: EventToPublish[]): Promise<void> {
  if (events.length === 0) return;
  await publish(
    'webhook',
    webhookMessages(taskId, events).map((m) => ({ body: m })),
  );
}
