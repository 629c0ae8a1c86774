import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queues } from '../../infra/consumers.ts';
import { localSqsClient } from '../../shared/local/queues.ts';
import { TestReceiver } from '../support/receiver.ts';
import {
  admin,
  type ChildStack,
  createApp,
  createWebhookTask,
  reportAlarm,
  startChildStack,
  type Task,
  waitGone,
} from './local-child-stack.ts';

/**
 * One task's receiver down among 30 healthy tasks: the healthy tasks get every event, the dead one's
 * retries wait on the queue as delayed messages, and the webhook queue never holds a message in flight
 * longer than one invocation of its consumer. A stack of its own (a child process) whose retries come
 * after 5 s, then 30 s, longer than the webhook consumer's timeout (10 s): a retry that fails again
 * and were held in flight for its backoff would show. How fast the healthy tasks' events arrive is
 * the benchmark's business (`npm run bench:ingest -- --only isolation`).
 */
const HEALTHY = 30;
const ALARMS_PER_TASK = 8;
const BACKOFF_SECONDS = [5, 30, 30, 30, 30, 30];
const consumer = queues.find((q) => q.name === 'webhook')!;
/** The local event source runs at most 20 batches of 10 at once (PollerScale.max). */
const MOST_IN_FLIGHT = 20 * consumer.batchSize;

let dir: string;
let stateFile: string;
let stack: ChildStack;
const healthy = new TestReceiver();
const dead = new TestReceiver();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tocsin-isolation-'));
  await healthy.start();
  await dead.start();
  // Down: accepts the connection and never answers in time (each attempt waits out the 200 ms timeout).
  dead.behaviour = { delayMs: 10_000 };
  stateFile = join(dir, 'state.json');
  stack = await startChildStack({
    dataDir: join(dir, 'data'),
    stateFile,
    env: { WEBHOOK_BACKOFF_SECONDS: BACKOFF_SECONDS.join(',') },
  });
}, 120_000);

afterAll(async () => {
  if (stack.child.exitCode === null && stack.child.signalCode === null) {
    stack.child.kill('SIGTERM');
    await stack.exited;
  }
  await waitGone(stack.javaPid, 10_000);
  await healthy.stop();
  await dead.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('one receiver down among 30 healthy tasks', () => {
  it('holds nothing in flight past an invocation: the dead task waits as delayed retries, the others get every event', async () => {
    // Arrange
    const sqs = localSqsClient(stack.sqsEndpoint, stack.region);
    const url = stack.queueUrls.webhook;
    expect((await admin(stateFile, 'import', 'test/fixtures/directory.json')).code).toBe(0);
    const app = await createApp(stateFile);
    const tasks: Task[] = [];
    for (let i = 0; i < HEALTHY; i++) tasks.push(await createWebhookTask(stack.url, app, healthy.url));
    const down = await createWebhookTask(stack.url, app, dead.url);
    const samples: { inFlight: number; delayed: number }[] = [];
    let sampling = true;
    const sample = async () => {
      const a =
        (
          await sqs.send(
            new GetQueueAttributesCommand({
              QueueUrl: url,
              AttributeNames: ['ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
            }),
          )
        ).Attributes ?? {};
      const s = {
        inFlight: Number(a.ApproximateNumberOfMessagesNotVisible),
        delayed: Number(a.ApproximateNumberOfMessagesDelayed),
      };
      samples.push(s);
      return s;
    };
    const sampler = (async () => {
      while (sampling) {
        await sample();
        await new Promise((r) => setTimeout(r, 200));
      }
    })();

    try {
      // Act: every task reports, round after round
      const uuids = new Map<number, string[]>();
      for (let round = 0; round < ALARMS_PER_TASK; round++) {
        const answers = await Promise.all(
          [...tasks, down].map((t) => reportAlarm(stack.url, t, { round, host: `h-${t.id}` })),
        );
        for (const [i, t] of [...tasks, down].entries()) {
          expect(answers[i].code, `task ${t.id}`).toBe(0);
          uuids.set(t.id, [...(uuids.get(t.id) ?? []), answers[i].uuid as string]);
        }
      }
      const lastReport = Date.now();
      const expected = tasks.flatMap((t) => uuids.get(t.id) ?? []);
      await healthy.waitFor((all) => {
        const got = new Set(
          all.filter((r) => r.json?.event === 'ALARM').map((r) => r.json.data.history.uuid),
        );
        return expected.every((u) => got.has(u));
      }, 60_000);
      // One consumer timeout (10 s) and more after the last report, before any retry is due (20 s)
      while (Date.now() - lastReport < (consumer.timeoutSeconds + 2) * 1000)
        await new Promise((r) => setTimeout(r, 200));
      sampling = false;
      await sampler;
      const after = await sample();

      // Assert: the healthy tasks got every event, the dead task's receiver was tried
      const got = healthy.received.filter((r) => r.json?.event === 'ALARM');
      expect(new Set(got.map((r) => r.json.data.task.id))).toEqual(new Set(tasks.map((t) => t.id)));
      expect(dead.received.some((r) => r.json?.event === 'ALARM')).toBe(true);
      // Assert: in flight bounded by the consumers' batches, never the retries
      expect(Math.max(...samples.map((s) => s.inFlight))).toBeLessThanOrEqual(MOST_IN_FLIGHT);
      // Assert: the dead task's retries wait as delayed messages, nothing is held in flight
      expect(after).toMatchObject({ inFlight: 0 });
      expect(after.delayed).toBeGreaterThan(0);
    } finally {
      sampling = false;
      await sampler;
      sqs.destroy();
    }
  }, 180_000);
});
