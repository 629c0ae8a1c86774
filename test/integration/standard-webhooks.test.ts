import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { standardWebhookSecret } from '../../shared/domain/webhooks/signature.ts';
import { call, serviceNow } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createTask } from '../support/tasks.ts';

/**
 * Behavior 11: a receiver verifies the service's events with a Standard Webhooks library, given the
 * `whsec_` form of the task secret (as the README shows).
 */
const receiver = new TestReceiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

describe('webhook events verify with the standardwebhooks library', () => {
  it('verifies a real ALARM event and refuses it tampered', async () => {
    // Arrange: a task whose secret the receiver knows (from the create answer)
    const task = await createTask({ receiver: { channels: { webhook: `${receiver.url}/verify` } } });
    const wh = new Webhook(standardWebhookSecret(task.secret));
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
    const [event] = (await receiver.waitFor((all) => all.some((r) => r.json?.event === 'ALARM'))).filter(
      (r) => r.json?.event === 'ALARM',
    );
    const headers = {
      'webhook-id': String(event.headers['webhook-id']),
      'webhook-timestamp': String(event.headers['webhook-timestamp']),
      'webhook-signature': String(event.headers['webhook-signature']),
    };
    // Assert
    expect(res.code).toBe(0);
    expect(wh.verify(event.body, headers)).toMatchObject({
      event: 'ALARM',
      data: { history: { ctn: { disk: '97%' } } },
    });
    expect(() => wh.verify(event.body.replace('97%', '12%'), headers)).toThrow();
    expect(() => new Webhook(standardWebhookSecret(task.token)).verify(event.body, headers)).toThrow();
  });
});
