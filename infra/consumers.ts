/**
 * The service's queues, the consumer function of each, and the one-minute schedule: the functions
 * that are not routes (the routes are infra/definitions.ts). The CDK stack (infra/stack.ts) and the
 * local runtime (shared/local) both read these definitions. Pure data, like the routes: every
 * function says what it may do on AWS (`access`, built from the parts in infra/access.ts).
 */
import type { QueueName } from '../shared/contracts/messages.ts';
import {
  ALARM_PIPELINE,
  type Access,
  access,
  DUE_WORK,
  eventSource,
  NOTIFY_LOG,
  REPLAY_RUN,
  SEAL_KEY,
  WEBHOOK_ATTEMPTS,
} from './access.ts';

export interface QueueDef {
  name: QueueName;
  /**
   * Seconds a received message stays invisible: six times the consumer's timeout (AWS's advice for
   * SQS event sources, which retry throttled invocations within the visibility window).
   */
  visibilityTimeoutSeconds: number;
  /** Receives before a message moves to the dead-letter queue. */
  maxReceiveCount: number;
  /**
   * Days a message is kept (SQS: 1 minute to 14 days). The alarm queue holds accepted alarms: the
   * longest SQS allows, so that an outage of the pipeline of up to two weeks loses none.
   */
  retentionDays: number;
  consumer: string;
  batchSize: number;
  /**
   * Whether the event source gathers a partial batch for a moment (its batching window: 1 s on AWS,
   * 80 ms locally): only for the alarm queue, where a fuller batch shares its writes. Webhook and due
   * messages are already bundles, and a window would add its length to every notification of a
   * person at low rates.
   */
  gather: boolean;
  /** Consumer Lambda timeout. */
  timeoutSeconds: number;
  /** What the consumer may do on AWS, reading its own queue (its event source) included. */
  access: Access;
}

export const queues: QueueDef[] = [
  {
    name: 'alarm',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    retentionDays: 14,
    consumer: 'functions/queue/process-alarm.ts',
    batchSize: 25,
    gather: true,
    timeoutSeconds: 30,
    // The alarm queue itself: alarms of a metric other consumers keep committing are handed back.
    access: access(eventSource('alarm'), SEAL_KEY, ALARM_PIPELINE, { queues: { SendMessage: ['alarm'] } }),
  },
  {
    name: 'webhook',
    visibilityTimeoutSeconds: 60,
    // 1 first attempt + 6 retries (API guide §12.5), each a new message: the consumer itself puts an
    // event in the DLQ after its 7th failure. The redrive policy catches what can never be read.
    maxReceiveCount: 7,
    retentionDays: 4,
    consumer: 'functions/queue/deliver-webhook.ts',
    batchSize: 10,
    gather: false,
    timeoutSeconds: 10,
    // The task (cached), the event's past attempts and the delivery log, the attempts recorded, a
    // retry's attempt claimed, each retry queued again as a delayed message, an event whose retries
    // are used up put in the DLQ.
    access: access(eventSource('webhook'), SEAL_KEY, WEBHOOK_ATTEMPTS, {
      items: {
        GetItem: ['TASK#'],
        BatchGetItem: ['TASK#'],
        BatchWriteItem: ['WHEVT#', 'WHLOG#'],
        PutItem: ['WHEVT#'],
      },
      queues: { SendMessage: ['webhook', 'webhook-dlq'] },
    }),
  },
  {
    name: 'notify',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 7,
    retentionDays: 4,
    consumer: 'functions/queue/send-notification.ts',
    batchSize: 10,
    // A batch goes as soon as it is received: a person waits for it (its producer sends its jobs
    // together anyway).
    gather: false,
    timeoutSeconds: 30,
    // The job's state and its run recorded (a batch's settled first runs in the task's notification
    // log, read back for a message received again), the task (cached) and its template, the users,
    // each robot's send slots, a retry queued again as a delayed message (a job whose retries are used
    // up put in the DLQ); the provider credentials and the providers themselves.
    access: access(eventSource('notify'), SEAL_KEY, NOTIFY_LOG, {
      items: {
        GetItem: ['NJOB#', 'TASK#', 'TPL#'],
        BatchGetItem: ['TASK#', 'USER#'],
        UpdateItem: ['NJOB#', 'ROBOT#'],
        BatchWriteItem: ['NJOB#', 'NLOG#'],
      },
      queues: { SendMessage: ['notify', 'notify-dlq'] },
      secrets: ['notify-providers'],
      notifyProviders: true,
    }),
  },
  {
    // Due work the scheduled function leased (due/runner.ts): many items to a message, each run once
    // and removed on its lease token. A message given up on leaves its items leased: the next run
    // takes them over when the lease passes (15 minutes, longer than 3 receives x 4 minutes).
    name: 'due',
    visibilityTimeoutSeconds: 240,
    maxReceiveCount: 3,
    retentionDays: 4,
    consumer: 'functions/queue/run-due.ts',
    batchSize: 10,
    gather: false,
    timeoutSeconds: 40,
    access: access(eventSource('due'), DUE_WORK),
  },
  {
    name: 'replay',
    // A replay of a large window (up to 20,000 alarms) runs for minutes; a failed one is tried once more.
    visibilityTimeoutSeconds: 1800,
    maxReceiveCount: 2,
    retentionDays: 4,
    consumer: 'functions/queue/run-replay.ts',
    batchSize: 1,
    gather: false,
    timeoutSeconds: 300,
    // The replay's request and result, the task (its robots sealed), and what a replay reads.
    access: access(eventSource('replay'), SEAL_KEY, REPLAY_RUN, { items: { GetItem: ['REPLAY#', 'TASK#'] } }),
  },
];

export const schedule = {
  handler: 'functions/schedule/run-due-work.ts',
  rateMinutes: 1,
  timeoutSeconds: 55,
  // The dispatcher of due work: the due partitions read and their items leased (PartiQL UPDATEs),
  // then put on the due queue, whose consumer runs them (queues, `due`).
  access: access({
    items: { Query: ['DUE#'], PartiQLUpdate: ['DUE#'] },
    queues: { SendMessage: ['due'] },
  }),
};

/**
 * The pre-traffic check of every gradual deployment (infra/constructs/deployments.ts): CodeDeploy
 * invokes it before moving traffic to a new version, and it calls that version once. No trigger of
 * the service runs it, and the local runtime has no deployments.
 */
export const deployCheck = {
  handler: 'functions/deploy/pre-traffic.ts',
  // The check task's token, to sign its test report (its CodeDeploy and Lambda calls: deployments.ts).
  access: access(SEAL_KEY, { items: { GetItem: ['TASK#'] } }),
};
