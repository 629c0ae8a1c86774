/**
 * The queues and the messages they carry: the contract between the functions that put messages on a
 * queue and the consumer that takes them off (part of the contracts floor, shared/contracts). Every
 * message is JSON; each carries an id that makes its processing idempotent.
 */
import type { Level } from './levels.ts';
import type { OncallAnswer } from './oncall.ts';
import type { Channel, ReceiverConfig, Robot } from './receivers.ts';

/** The service's queues (each with its dead-letter queue), by the names the deployment gives them. */
export type QueueName = 'alarm' | 'webhook' | 'notify' | 'due' | 'replay';

/** An accepted alarm report, on the alarm queue (API guide §7, §9). */
export interface AlarmMessage {
  kind: 'alarm';
  uuid: string;
  task_id: number;
  level: Level;
  ctn: Record<string, unknown>;
  notice_time: number;
  /** Unix seconds when the report was accepted. */
  reported_at: number;
  /** When the report was accepted, ms (the pipeline's lag is measured from it; absent before). */
  reported_ms?: number;
  /** Per-alarm receiver override. */
  receiver?: ReceiverConfig;
  /**
   * The sender says this alarm is a recovery (a monitor's resolved alert, a heartbeat back): it is
   * processed as API guide §9.2's recovery whatever the task's recovery conditions.
   */
  recovery?: true;
  /**
   * The uuid is named by the alert it came from (a monitor adapter): the same alert sent again has the
   * same uuid, and a task that stores nothing remembers it (`ALARM#...`/`SEEN`) to send it once.
   */
  dedup?: true;
  /**
   * Times the alarm pipeline handed this alarm back to the queue because other consumers kept
   * committing its metric first (a new message each time, so contention never uses up its receives).
   */
  handed_back?: number;
}

/** The outbound webhook envelope (API guide §12.1). */
export interface WebhookBody {
  event: 'PING' | 'ALARM' | 'UPGRADE' | 'RECOVERY' | 'WORKFLOW';
  type: string;
  data: Record<string, unknown>;
  extra: Record<string, unknown>;
}

/** One webhook event to deliver (API guide §12). */
export interface WebhookEvent {
  /** `webhook-id`: unique per event, the same on every retry. */
  event_id: string;
  /**
   * Events with the same key are delivered in order (a workflow's events, the alarms of a compression
   * metric); events without one may be delivered in parallel (API guide §12.6).
   */
  order_key?: string;
  /**
   * A producer ran again for an event it may have published before (a redelivered alarm): the event
   * is sent only if it was not delivered since this time (ms).
   */
  replay_since_ms?: number;
  body: WebhookBody;
}

/**
 * The events a producer raised for one task at once (a pipeline batch, a workflow operation), on the
 * webhook queue as one message: one send, receive and delete for all of them.
 */
export interface WebhookBundle {
  kind: 'webhooks';
  task_id: number;
  /** Unix seconds the events were created. */
  created_at: number;
  events: WebhookEvent[];
}

/** A queue message that may wait for its retry longer than SQS's largest delay (15 minutes). */
export interface Retried {
  /** The retry is not due before this time (ms, real time); absent when its delay was enough. */
  retry_at_ms?: number;
}

/**
 * One event on the webhook queue: an event to try again (each retry is a new message, sent with the
 * backoff as its delay, so no retry is ever held in flight), or a message of an earlier version.
 */
export interface WebhookMessage extends WebhookEvent, Retried {
  kind: 'webhook';
  task_id: number;
  /** Unix seconds the event was created. */
  created_at: number;
  /** Attempts made before this message existed: its attempt n is this + n. */
  attempts_before?: number;
  /** A replay already looked at once (see the deliverer): sent now unless it was delivered. */
  deferred?: boolean;
  /**
   * Attempts made before an operator redrove the event from the dead-letter queue (set with
   * `attempts_before`, so the numbering goes on): its retries count again from there.
   */
  redriven_after?: number;
}

/** Notification scenes (API guide §11.2). */
export type NotifyScene =
  | 'compressed'
  | 'not_compress'
  | 'upgrade'
  | 'recovery'
  | 'generated'
  | 'claim'
  | 'assign'
  | 'processed'
  | 'reactive'
  | 'close'
  | 'remind_pending'
  | 'remind_processing';

/** Values templates may reference (`{task.name}`, `{history.ctn.hostname}`, `{context.zcount}` ...). */
export interface RenderContext {
  task: { id: number; name: string; [k: string]: unknown };
  history?: Record<string, unknown>;
  workflow?: Record<string, unknown>;
  pipeline?: Record<string, unknown>;
  context?: Record<string, unknown>;
}

/** One message for one channel, on the notify queue (API guide §9.7, §11). */
export interface NotificationJob extends Retried {
  kind: 'notify';
  /** Unique and deterministic per (event, channel): attempts are recorded under it. */
  job_id: string;
  task_id: number;
  scene: NotifyScene;
  channel: Exclude<Channel, 'webhook'>;
  /** uids, for user channels. */
  users?: number[];
  /** robots, for dinggroup / yachgroup. */
  robots?: Robot[];
  /**
   * The answers of the schedules whose on-call people `users` holds, or (with no users) of the one
   * schedule that had nobody on call: recorded with the job (API guide §18.5).
   */
  oncall?: OncallAnswer[];
  context: RenderContext;
  /** Published again by a producer that ran again (a redelivered alarm): may have been sent already. */
  replay?: boolean;
  /** A replay's job may have been sent since this time (ms): its task's log is searched from there. */
  replay_since_ms?: number;
  /**
   * Delivery runs made before this message existed (an operator redrove the job from the dead-letter
   * queue): attempts are numbered on from there, and the job's state is read first.
   */
  attempts_before?: number;
  /**
   * Attempts made before an operator redrove the job from the dead-letter queue (set with
   * `attempts_before`): its retries count again from there.
   */
  redriven_after?: number;
  /**
   * The pending workflow the message is about, in the reactivation round it was sent for: its
   * messages carry claim links, each recipient's minted when the message is sent (API guide §11.7).
   */
  claim?: ClaimTarget;
}

/** A workflow a claim link may claim, and its reactivation round. */
export interface ClaimTarget {
  workflow_id: number;
  round: number;
}

/**
 * Due work a scheduled run leased, on the due queue (shared/domain/due/runner.ts): many items to a
 * message, each with its lease token.
 */
export interface DueMessage {
  kind: 'due';
  items: {
    kind: string;
    ref: string;
    due_at: number;
    payload: Record<string, unknown>;
    attempts?: number;
    token: string;
  }[];
}
