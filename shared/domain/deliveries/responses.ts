/**
 * What the delivery routes answer with (the envelope's `data`): the types the use cases return and
 * the OpenAPI document describes (npm run gen:openapi).
 */
import type { NotifyScene } from '../../contracts/messages.ts';
import type { NotifyChannel } from '../tasks/templates.ts';
import type { Carried, Failures, Reason } from './dead-letter.ts';
import type { DeliveryKind, DlqQueue } from './schemas.ts';

/** One attempt as the listing shows it. */
export type DeliveryView =
  | {
      kind: 'webhook';
      /** The event id (`webhook-id`). */
      id: string;
      event: string;
      type: string;
      channel: 'webhook';
      /** Scheme, host and port only. */
      target?: string;
      attempt: number;
      outcome: string;
      /** HTTP status, when the receiver answered. */
      status?: number;
      error?: string;
      duration_ms: number;
      at: number;
      at_ms: number;
    }
  | {
      kind: 'notify';
      /** The job id. */
      id: string;
      scene: string;
      channel: string;
      /** Masked as recorded (robot token, e-mail, phone). */
      target: string;
      attempt: number;
      outcome: string;
      /** Provider code (errcode, SMTP/HTTP status, AWS error name) or our reason code. */
      code: string;
      error?: string;
      duration_ms: number;
      at: number;
      at_ms: number;
    };

/** GET /alarmtask/deliveries: newest first. */
export interface DeliveryList {
  task_id: number;
  kind: DeliveryKind;
  deliveries: DeliveryView[];
  /** Empty when there is nothing more. */
  next_cursor: string;
}

/** POST /alarmtask/webhook/test: the PING's attempt. */
export interface WebhookTested {
  /** The event id of the PING. */
  webhook_id: string;
  event: string;
  type: string;
  channel: 'webhook';
  /** Scheme, host and port only. */
  target?: string;
  attempt: number;
  outcome: string;
  /** HTTP status, when the receiver answered. */
  status?: number;
  error?: string;
  duration_ms: number;
  at: number;
  at_ms: number;
}

/** POST /alarmtask/template/preview: the message as the channel would send it. */
export interface TemplatePreview {
  scene: NotifyScene;
  channel: NotifyChannel;
  /** Where the template comes from. */
  source: 'default' | 'predefined' | 'custom';
  /** Rendered with a stored alarm (`uuid`) or a sample one. */
  alarm: 'stored' | 'sample';
  uuid?: string;
  format: 1 | 2 | 3 | 4;
  /** The e-mail subject or markdown title; absent where the channel shows none. */
  title?: string;
  /** The body as sent: HTML for HTML e-mail, markdown for markdown robots, plain text otherwise. */
  text: string;
}

/** A dead letter of a queue: what it carried (never its secrets) and why its deliveries failed. */
export type QueueDeadLetter = {
  message_id: string;
  queue: 'alarm' | 'webhook' | 'notify';
  receive_count: number;
  /** Unix ms the message was first sent. */
  sent_at?: number;
  /** Alarms: whether the alarm was recorded before processing failed. */
  processed?: boolean;
} & Carried &
  Failures;

/** A piece of due work that failed ten times and was put aside. */
export interface DeadDueWork {
  /** `<kind>#<due at>#<ref>`: the id to redrive it by. */
  message_id: string;
  queue: 'due';
  kind: string;
  ref: string;
  due_at: number;
  task_id?: number;
  attempts: number;
  last_failure_at: number;
  reason: Reason;
}

/** GET /delivery/dlq */
export interface DeadLetterList {
  queue: DlqQueue;
  dead_letters: (QueueDeadLetter | DeadDueWork)[];
  /** Whether there are more than those listed. */
  more: boolean;
  /** Messages read to find them. */
  scanned: number;
  note?: string;
}

/** POST /delivery/dlq/redrive */
export interface Redriven {
  queue: DlqQueue;
  redriven: number;
  message_ids: string[];
  /** Whether some are left: call again. */
  more: boolean;
}
