import { randomUUID } from 'node:crypto';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import type { NotificationJob } from '../../shared/contracts/messages.ts';
import { publish } from '../../shared/messaging/sqs.ts';
import { listAttemptsOfJob } from '../../shared/domain/notifications/repository.ts';
import { FakeClient } from '../support/fakes.ts';
import { createTask } from '../support/tasks.ts';

/**
 * A notification whose provider keeps failing: each retry is a new message on the notify queue,
 * delayed by its backoff (never held in flight), and after its seventh attempt the consumer puts the
 * job in the notify dead-letter queue itself.
 */
const fakes = new FakeClient(inject('fakes').url);
const stack = inject('stack');

describe('notification retries', () => {
  it('wait as delayed messages, not in flight, and end in the dead-letter queue after seven attempts', async () => {
    // Arrange: a robot that answers 503 to everything
    const task = await createTask();
    const token = `tok${randomUUID().replace(/-/g, '')}`;
    await fakes.robot(token, { replies: Array.from({ length: 10 }, () => ({ status: 503 })) });
    const jobId = `test-${randomUUID()}:not_compress:dinggroup`;
    const job: NotificationJob = {
      kind: 'notify',
      job_id: jobId,
      task_id: task.id,
      scene: 'not_compress',
      channel: 'dinggroup',
      robots: [{ webhook: token }],
      context: { task: { id: task.id, name: task.name }, history: { level: 2, ctn: { host: 'web-1' } } },
    };
    const sqs = new SQSClient({
      endpoint: stack.sqsEndpoint,
      region: stack.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const delayedSeen: number[] = [];
    try {
      // Act
      await publish('notify', [{ body: job }]);
      let dead: NotificationJob | undefined;
      const deadline = Date.now() + 60_000;
      while (!dead && Date.now() < deadline) {
        const a = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: stack.queueUrls.notify,
            AttributeNames: ['ApproximateNumberOfMessagesDelayed'],
          }),
        );
        delayedSeen.push(Number(a.Attributes?.ApproximateNumberOfMessagesDelayed ?? 0));
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: stack.dlqUrls.notify,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 0,
          }),
        );
        for (const m of out.Messages ?? []) {
          const body = JSON.parse(m.Body ?? '{}') as NotificationJob;
          if (body.job_id !== jobId) continue;
          dead = body;
          await sqs.send(
            new DeleteMessageCommand({ QueueUrl: stack.dlqUrls.notify, ReceiptHandle: m.ReceiptHandle }),
          );
        }
        if (!dead) await new Promise((r) => setTimeout(r, 200));
      }
      // Assert: seven runs, each a failed attempt, the job dead-lettered with them counted
      expect(dead).toMatchObject({ job_id: jobId, attempts_before: 7 });
      const attempts = await listAttemptsOfJob(jobId);
      expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual(
        [1, 2, 3, 4, 5, 6, 7].map((n) => [n, 'failed']),
      );
      // ... its retries waited as delayed messages
      expect(Math.max(...delayedSeen)).toBeGreaterThan(0);
    } finally {
      sqs.destroy();
    }
  }, 90_000);
});
