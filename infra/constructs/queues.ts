import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type QueueDef, type QueueName, queues as queueDefs } from '../definitions.ts';

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
        retentionPeriod: Duration.days(4),
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
