import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { standardWebhookSecret } from '../../shared/domain/webhooks/signature.ts';
import { call, serviceNow } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { createTask } from '../support/tasks.ts';

/**
 * API guide §12.2 through the real stack: a receiver on 127.0.0.1 verifies the service's events with the
 * Standard Webhooks library, given the `whsec_` form of the task secret from the create answer (as
 * the README shows): it answers 200 only to events that verify, like a receiver in production would.
 */
const receiver = new TestReceiver();
/** The library each task's receiver uses, by task id (set once the create answer is in). */
const verifiers = new Map<number, Webhook>();
/** What the receiver decided for each ALARM event: verified or refused. */
const verdicts: { taskId: number; ok: boolean }[] = [];

function verifyAlarm(r: Received): { status: number } {
  if (r.json?.event !== 'ALARM') return { status: 200 };
  const taskId = Number(r.json.data?.task?.id);
  const wh = verifiers.get(taskId);
  try {
    if (!wh) throw new Error('no secret for this task');
    // As a Node receiver would: the raw body and the request's own headers.
    wh.verify(r.body, r.headers as Record<string, string>);
    verdicts.push({ taskId, ok: true });
    return { status: 200 };
  } catch {
    verdicts.push({ taskId, ok: false });
    return { status: 401 };
  }
}

beforeAll(async () => {
  receiver.behaviour = verifyAlarm;
  await receiver.start();
});
afterAll(() => receiver.stop());

describe('webhook events verify with the standardwebhooks library (API guide §12.2)', () => {
  it('a real ALARM event verifies with whsec_ + base64(task secret), and not once tampered', async () => {
    // Arrange: a task whose secret the receiver knows (from the create answer)
    const task = await createTask({ receiver: { channels: { webhook: `${receiver.url}/verify` } } });
    const wh = new Webhook(standardWebhookSecret(task.secret));
    verifiers.set(task.id, wh);
    // Act
    const timestamp = await serviceNow();
    const res = await call('POST', '/alarm/report', {
      app: null,
      json: {
        taskid: task.id,
        timestamp,
        sign: hmacSign(task.token, task.id, timestamp),
        ctn: { disk: '97%' },
      },
    });
    const alarms = await receiver.waitFor((all) =>
      all.some((r) => r.json?.event === 'ALARM' && r.json.data?.task?.id === task.id),
    );
    const event = alarms.find((r) => r.json?.event === 'ALARM' && r.json.data?.task?.id === task.id);
    // Assert: the receiver verified it on arrival (and answered 200)
    expect(res.code).toBe(0);
    expect(verdicts.filter((v) => v.taskId === task.id)).toEqual([{ taskId: task.id, ok: true }]);
    if (!event) throw new Error('no ALARM event');
    const headers = event.headers as Record<string, string>;
    expect(wh.verify(event.body, headers)).toMatchObject({
      event: 'ALARM',
      data: { task: { id: task.id }, history: { ctn: { disk: '97%' } } },
    });
    // Assert: a tampered body, a replayed id under another timestamp, another secret are refused
    expect(() => wh.verify(event.body.replace('97%', '12%'), headers)).toThrow();
    const later = String(Number(headers['webhook-timestamp']) + 1);
    expect(() => wh.verify(event.body, { ...headers, 'webhook-timestamp': later })).toThrow();
    expect(() => new Webhook(standardWebhookSecret(task.token)).verify(event.body, headers)).toThrow();
  });
});
