import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { startFauxqs } from 'fauxqs';
import { type QueueDef, queues } from '../../infra/definitions.ts';
import { logger } from '../log.ts';
import { lambdaContext, loadHandler } from './lambda.ts';

export interface LocalQueues {
  endpoint: string;
  urls: Record<string, string>;
  dlqUrls: Record<string, string>;
  stop(): Promise<void>;
}

/** Starts the SQS emulator with every queue of the stack and its dead-letter queue. */
export async function startQueues(port: number, region: string): Promise<LocalQueues> {
  const server = await startFauxqs({ port, logger: false, host: '127.0.0.1', defaultRegion: region });
  const urls: Record<string, string> = {};
  const dlqUrls: Record<string, string> = {};
  for (const q of queues) {
    const dlq = server.createQueue(`tocsin-${q.name}-dlq`, { attributes: { MessageRetentionPeriod: '1209600' } });
    const main = server.createQueue(`tocsin-${q.name}`, {
      attributes: {
        VisibilityTimeout: String(q.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount: q.maxReceiveCount }),
      },
    });
    urls[q.name] = main.queueUrl;
    dlqUrls[q.name] = dlq.queueUrl;
  }
  return { endpoint: server.address, urls, dlqUrls, stop: () => server.stop() };
}

export function localSqsClient(endpoint: string, region: string): SQSClient {
  return new SQSClient({ endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

function toRecord(m: Message, queueArn: string, region: string): SQSRecord {
  const a = m.Attributes ?? {};
  return {
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/**
 * The local stand-in for Lambda's SQS event source mapping: long-polls a queue, invokes the
 * consumer with an SQS event, deletes what succeeded and leaves reported failures (partial batch
 * responses) or a thrown batch to reappear after their visibility timeout.
 */
export function startPoller(client: SQSClient, def: QueueDef, url: string, region: string, concurrency: number) {
  let running = true;
  const arn = `arn:aws:sqs:${region}:000000000000:tocsin-${def.name}`;
  const loop = async () => {
    const handler = await loadHandler(def.consumer);
    while (running) {
      let messages: Message[] = [];
      try {
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: def.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        messages = out.Messages ?? [];
      } catch (err) {
        if (!running) break;
        logger.warn('local poller receive failed', { queue: def.name, error: err as Error });
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (messages.length === 0) continue;
      const event: SQSEvent = { Records: messages.map((m) => toRecord(m, arn, region)) };
      let failed = new Set<string>();
      try {
        const res = (await handler(event, lambdaContext(`tocsin-${def.name}-consumer`, def.timeoutSeconds * 1000))) as
          | { batchItemFailures?: { itemIdentifier: string }[] }
          | undefined;
        failed = new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      } catch (err) {
        logger.error('local consumer threw; the whole batch will be retried', { queue: def.name, error: err as Error });
        continue;
      }
      const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
      if (done.length > 0) {
        await client
          .send(
            new DeleteMessageBatchCommand({
              QueueUrl: url,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
            }),
          )
          .catch((err) => logger.warn('local poller delete failed', { queue: def.name, error: err as Error }));
      }
    }
  };
  const loops = Array.from({ length: concurrency }, () =>
    loop().catch((err) => logger.error('local poller stopped', { queue: def.name, error: err as Error })),
  );
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
