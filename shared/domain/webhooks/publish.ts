import { randomUUID } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import type { WebhookBody, WebhookMessage } from '../../messaging/messages.ts';
import { publish } from '../../messaging/sqs.ts';

/**
 * Puts events for a task's webhook on the webhook queue. `eventId` should be deterministic when the
 * producer may run twice (e.g. `<alarm uuid>:ALARM`), so a redelivered producer does not create a
 * second event id; the deliverer de-duplicates on it.
 */
export async function publishWebhookEvents(
  taskId: number,
  events: { body: WebhookBody; eventId?: string }[],
): Promise<void> {
  if (events.length === 0) return;
  const messages: WebhookMessage[] = events.map((e) => ({
    kind: 'webhook',
    event_id: e.eventId ?? randomUUID(),
    task_id: taskId,
    created_at: nowSeconds(),
    body: e.body,
  }));
  await publish(
    'webhook',
    messages.map((m) => ({ body: m })),
  );
}
