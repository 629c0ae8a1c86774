import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { config } from '../config/env.ts';
import { toWireJson } from '../json.ts';
import type { QueueName } from './messages.ts';

let client: SQSClient | undefined;

export function sqs(): SQSClient {
  if (!client) {
    const cfg = config();
    client = new SQSClient({
      region: cfg.region,
      ...(cfg.sqsEndpoint
        ? { endpoint: cfg.sqsEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
        : {}),
    });
  }
  return client;
}

export function queueUrl(queue: QueueName): string {
  const url = config().queueUrls[queue];
  if (!url) throw new Error(`config: queue url for ${queue} is not set`);
  return url;
}

export interface OutboundMessage {
  body: unknown;
  /** Seconds before the message becomes visible (0..900). */
  delaySeconds?: number;
}

/**
 * Durably puts messages on a queue: batches of 10, failed entries retried, and an error thrown if
 * any message could not be queued (callers must then not acknowledge their own input).
 */
export async function publish(queue: QueueName, messages: OutboundMessage[]): Promise<void> {
  const url = queueUrl(queue);
  const chunks: OutboundMessage[][] = [];
  for (let i = 0; i < messages.length; i += 10) chunks.push(messages.slice(i, i + 10));
  await Promise.all(
    chunks.map(async (chunk) => {
      let entries = chunk.map((m, j) => ({
        Id: String(j),
        MessageBody: toWireJson(m.body),
        DelaySeconds: m.delaySeconds ? Math.min(900, Math.max(0, Math.floor(m.delaySeconds))) : undefined,
      }));
      for (let attempt = 0; entries.length > 0; attempt++) {
        const out = await sqs().send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
        const failed = new Set((out.Failed ?? []).map((f) => f.Id));
        entries = entries.filter((e) => failed.has(e.Id));
        if (entries.length > 0 && attempt >= 3) {
          throw new Error(`could not queue ${entries.length} message(s) on ${queue}`);
        }
        if (entries.length > 0) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      }
    }),
  );
}
