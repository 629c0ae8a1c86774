/**
 * Message types carried by the queues. Every message is JSON; each carries an id that makes its
 * processing idempotent.
 */
import type { Level, ReceiverConfig } from '../domain/tasks/model.ts';

export type QueueName = 'alarm' | 'webhook' | 'notify';

/** An accepted alarm report, on the alarm queue (behavior 6, 7). */
export interface AlarmMessage {
  kind: 'alarm';
  uuid: string;
  task_id: number;
  level: Level;
  ctn: Record<string, unknown>;
  notice_time: number;
  /** Unix seconds when the report was accepted. */
  reported_at: number;
  /** Per-alarm receiver override. */
  receiver?: ReceiverConfig;
}

/** The outbound webhook envelope (interface 6.1). */
export interface WebhookBody {
  event: 'PING' | 'ALARM' | 'UPGRADE' | 'RECOVERY' | 'WORKFLOW';
  type: string;
  data: Record<string, unknown>;
  extra: Record<string, unknown>;
}

/** One webhook event to deliver, on the webhook queue (behavior 11). */
export interface WebhookMessage {
  kind: 'webhook';
  /** `webhook-id`: unique per event, the same on every retry. */
  event_id: string;
  task_id: number;
  /** Unix seconds the event was created. */
  created_at: number;
  body: WebhookBody;
}
