import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { QueueName } from '../../shared/contracts/messages.ts';
import { type QueueDef, queues as queueDefs } from '../consumers.ts';

/**
 * The most instances of each queue's consumer its SQS event source runs at once (MaximumConcurrency),
 * sized to what lies behind it. Messages beyond it wait in the queue (they are not throttled, so their
 * receive count does not grow): better than invocations that throttle, contend and dead-letter.
 * - alarm (10 x batches of 25): every alarm writes several items, and alarms of one metric update the
 *   same items; more consumers add optimistic-write retries on a hot metric, not throughput;
 * - webhook (20): outbound POSTs of at most 200 ms to the tasks' receivers, little table work;
 * - notify (5 x batches of 10): the providers' rate limits (SNS SMS, SES and the chat APIs allow tens of
 *   messages per second to an account or app);
 * - due (20 x batches of 10 messages of 25 items): a minute's due work (delayed flushes, reminders)
 *   run as fast as it falls due; each item is a few table calls and a message or two.
 * - replay (2 x one replay): a what-if replay is a few seconds to a few minutes of CPU and a burst of
 *   reads; two at once keep them from crowding the table.
 * `consumerConcurrency` changes them per stack (2 to 1,000; 0 for no cap); docs/aws-operations.md.
 */
export const DEFAULT_CONSUMER_CONCURRENCY: Record<QueueName, number> = {
  alarm: 10,
  webhook: 20,
  notify: 5,
  due: 20,
  replay: 2,
};

/** The event source's MaximumConcurrency for a setting (undefined: no cap); refuses what SQS refuses. */
export function maxConcurrency(queue: QueueName, setting: number | undefined): number | undefined {
  const n = setting ?? DEFAULT_CONSUMER_CONCURRENCY[queue];
  if (n === 0) return undefined;
  if (!Number.isInteger(n) || n < 2 || n > 1000)
    throw new Error(`consumerConcurrency.${queue}: 2 to 1000 instances, or 0 for no cap (got ${n})`);
  return n;
}

/**
 * Instances reserved for the alarm consumer and the due work (`reservedConcurrency`), as for the
 * intake functions: a flood anywhere else in the account cannot take the alarm path's consumer or the
 * minute's due work away. A consumer's reservation must hold its queue's cap (above it the event source
 * would be throttled), plus room for a deployment's pre-traffic check. `due` reserves for the due
 * queue's consumer, which runs the items, and DISPATCHER_RESERVED more for the scheduled function
 * that leases them (it runs once a minute: at most one run and one check overlap). 0 reserves nothing.
 */
export type ReservedWorker = 'alarm' | 'due';
export const DEFAULT_RESERVED_CONCURRENCY: Record<ReservedWorker, number> = { alarm: 12, due: 22 };
/** Instances of the due-work dispatcher (the scheduled function) reserved beside `due`'s. */
export const DISPATCHER_RESERVED = 2;

/** The reservation of a worker for a setting (undefined: none); refuses one below its queue's cap. */
export function reservedConcurrency(
  worker: ReservedWorker,
  setting: number | undefined,
  cap: number | undefined,
): number | undefined {
  const n = setting ?? DEFAULT_RESERVED_CONCURRENCY[worker];
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`reservedConcurrency.${worker}: a whole number of instances, 0 for none (got ${n})`);
  if (n === 0) return undefined;
  if (cap !== undefined && n < cap)
    throw new Error(
      `reservedConcurrency.${worker} (${n}) is below the ${worker} consumer's cap consumerConcurrency.${worker} ` +
        `(${cap}): its event source would be throttled`,
    );
  return n;
}

export interface ServiceQueue {
  def: QueueDef;
  queue: sqs.Queue;
  deadLetterQueue: sqs.Queue;
}

/** One SQS queue per `definitions.queues` entry, each with its dead-letter queue and redrive policy. */
export class ServiceQueues extends Construct {
  readonly byName: Record<QueueName, ServiceQueue>;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const entries = queueDefs.map((def): [QueueName, ServiceQueue] => {
      if (def.visibilityTimeoutSeconds < def.timeoutSeconds) {
        throw new Error(`queue ${def.name}: visibility timeout must be at least the consumer timeout`);
      }
      const name = pascal(def.name);
      const deadLetterQueue = new sqs.Queue(this, `${name}DeadLetterQueue`, {
        retentionPeriod: Duration.days(14),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      });
      const queue = new sqs.Queue(this, `${name}Queue`, {
        visibilityTimeout: Duration.seconds(def.visibilityTimeoutSeconds),
        retentionPeriod: Duration.days(def.retentionDays),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: def.maxReceiveCount },
      });
      return [def.name, { def, queue, deadLetterQueue }];
    });
    this.byName = Object.fromEntries(entries) as Record<QueueName, ServiceQueue>;
  }

  get all(): ServiceQueue[] {
    return Object.values(this.byName);
  }
}

export function pascal(text: string): string {
  return text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
}
