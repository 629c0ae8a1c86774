import { describe, expect, it } from 'vitest';
import type { WebhookMessage } from '../../contracts/messages.ts';
import { deliverWebhooks } from './delivery.ts';
import { logged } from '../../testing/logs.ts';
import { verifyWebhookSignature } from './signature.ts';
import { fakes, message, type Posted, rec, SECRET, task, useDeliveryConfig } from './test-delivery.ts';

useDeliveryConfig();

describe('deliverWebhooks', () => {
  it('POSTs the stored body with the contract headers and a verifiable signature, logged in one write', async () => {
    // Arrange
    const f = fakes();
    const m = message(1);
    // Act
    const res = await deliverWebhooks([rec(m), rec(message(2))], f.deps);
    // Assert
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(2);
    const { headers, body, url } = f.posted.find((p) => p.headers['webhook-id'] === 'evt-12-1') as Posted;
    expect(url).toBe('https://hooks.example.com/in?token=abc');
    expect(body).toBe(JSON.stringify(m.body));
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'svc/9.8.7',
      'webhook-id': 'evt-12-1',
    });
    expect(headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(
      verifyWebhookSignature(
        SECRET,
        'evt-12-1',
        headers['webhook-timestamp'],
        body,
        headers['webhook-signature'],
      ),
    ).toBe(true);
    expect(f.own).toEqual([]);
    expect(f.logs).toHaveLength(1);
    expect(f.logs[0].map((a) => a.event_id).sort()).toEqual(['evt-12-1', 'evt-12-2']);
    expect(f.logs[0][0]).toMatchObject({
      task_id: 12,
      attempt: 1,
      outcome: 'delivered',
      status: 200,
      target: 'https://hooks.example.com',
      event: 'ALARM',
      type: 'compress_disable',
    });
    expect(JSON.stringify(f.logs)).not.toContain('token=abc');
  });

  it.each([
    [1, 5],
    [2, 30],
    [4, 600],
  ])(
    'on failure of attempt %i acknowledges it and queues the event again, delayed %i s, never held in flight',
    async (made, seconds) => {
      // Arrange: the event's attempt `made` (earlier ones counted in its message)
      const f = fakes({ status: 500 });
      const m = { ...message(1), attempts_before: made - 1 };
      // Act
      const res = await deliverWebhooks([rec(m, 1, 'm1')], f.deps);
      // Assert
      expect(res.batchItemFailures).toEqual([]);
      expect(f.requeued).toEqual([{ body: { ...m, attempts_before: made }, delaySeconds: seconds }]);
      expect(f.own[0]).toMatchObject({ outcome: 'failed', status: 500, error: 'HTTP 500', attempt: made });
      expect(f.logs).toEqual([]);
      expect(f.dead).toEqual([]);
    },
  );

  it.each([
    [5, 1800],
    [6, 3600],
  ])(
    'chains a backoff past SQS 15-minute delay: attempt %i waits %i s in steps of at most 900 s',
    async (made, seconds) => {
      // Arrange
      const f = fakes({ status: 500 });
      const m = { ...message(1), attempts_before: made - 1 };
      const before = Date.now();
      // Act
      await deliverWebhooks([rec(m, 1, 'm1')], f.deps);
      // Assert: queued for 900 s, due at the full backoff
      const [{ body, delaySeconds }] = f.requeued;
      expect(delaySeconds).toBe(900);
      expect(body.attempts_before).toBe(made);
      expect(body.retry_at_ms).toBeGreaterThanOrEqual(before + seconds * 1000);
      expect(body.retry_at_ms).toBeLessThanOrEqual(Date.now() + seconds * 1000);
    },
  );

  it('sends a chained retry received before it is due back with the rest of its delay, untried', async () => {
    // Arrange: due in 30 minutes, then in 10 minutes, then now
    const f = fakes({ status: 500 });
    const due = (ms: number) => ({ ...message(1), attempts_before: 5, retry_at_ms: Date.now() + ms });
    const early = due(1_800_000);
    // Act
    await deliverWebhooks([rec(early, 1, 'a')], f.deps);
    await deliverWebhooks([rec(due(600_000), 1, 'b')], f.deps);
    const res = await deliverWebhooks([rec(due(0), 1, 'c')], f.deps);
    // Assert: the early ones go back as they came, keeping their due time
    expect(f.requeued.slice(0, 2).map((r) => r.delaySeconds)).toEqual([900, 600]);
    expect(f.requeued[0].body).toEqual(early);
    expect(f.posted).toHaveLength(1);
    expect(f.own).toEqual([expect.objectContaining({ attempt: 6, outcome: 'failed' })]);
    expect(res.batchItemFailures).toEqual([]);
    // The sixth attempt failed: its retry is chained again (the last backoff, an hour)
    expect(f.requeued[2]).toMatchObject({ delaySeconds: 900, body: { attempts_before: 6 } });
  });

  it('puts an event whose seventh attempt failed in the dead-letter queue itself', async () => {
    // Arrange
    const f = fakes({ status: 500 });
    const m = { ...message(1), attempts_before: 6 };
    // Act
    const [res, warnings] = await logged('warn', () => deliverWebhooks([rec(m, 1, 'm1')], f.deps));
    // Assert
    expect(warnings.map(([message]) => message)).toEqual(['webhook events moved to the dead-letter queue after their attempts']);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.requeued).toEqual([]);
    expect(f.dead).toEqual([{ ...m, attempts_before: 7 }]);
    expect(f.own[0]).toMatchObject({ attempt: 7, outcome: 'failed' });
  });

  it('puts an event in the dead-letter queue once when the message that put it there comes back', async () => {
    // Arrange: the seventh attempt failed and went to the dead-letter queue; SQS lost the delete
    const f = fakes({ status: 500 });
    const m = { ...message(1), attempts_before: 6 };
    await logged('warn', () => deliverWebhooks([rec(m, 1, 'm1')], f.deps));
    // Act: the same message again, twice (its attempts look used up, then more so)
    const [res, warnings] = await logged('warn', () => deliverWebhooks([rec(m, 2, 'm1')], f.deps));
    const [third] = await logged('warn', () => deliverWebhooks([rec(m, 3, 'm1')], f.deps));
    // Assert: acknowledged, nothing sent, nothing moved again
    expect(warnings).toEqual([]);
    expect([res.batchItemFailures, third.batchItemFailures]).toEqual([[], []]);
    expect(f.dead).toEqual([{ ...m, attempts_before: 7 }]);
    expect(f.posted).toHaveLength(1);
  });

  it('puts an event whose retries were used up before a receive tried it in the dead-letter queue', async () => {
    // Arrange: a retry message whose receives all failed (a consumer that died each time)
    const f = fakes({ status: 500 });
    const m = { ...message(1), attempts_before: 6 };
    // Act
    const [res, warnings] = await logged('warn', () => deliverWebhooks([rec(m, 2, 'm1')], f.deps));
    // Assert: the attempts it made are those before this receive
    expect(warnings).toHaveLength(1);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.dead).toEqual([{ ...m, attempts_before: 7 }]);
    expect(f.posted).toEqual([]);
  });

  it('drops a second copy of a retry whose attempt another copy made: one line of retries per event', async () => {
    // Arrange: SQS hands out the retry for attempt 2 twice
    const f = fakes({ status: 500 });
    const retry = { ...message(1), attempts_before: 1 };
    // Act
    await deliverWebhooks([rec(retry, 1, 'a')], f.deps);
    const second = await deliverWebhooks([rec(retry, 1, 'b')], f.deps);
    // Assert: one attempt 2, one retry for attempt 3
    expect(second.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(1);
    expect(f.own.map((a) => a.attempt)).toEqual([2]);
    expect(f.requeued.map((r) => r.body.attempts_before)).toEqual([2]);
  });

  it('lets a message received again after its retry was queued (a lost delete) and that retry take one attempt between them', async () => {
    // Arrange: attempt 1 fails and queues the retry; SQS then hands the first message out again
    const f = fakes({ status: 500 });
    await deliverWebhooks([rec(message(1), 1, 'm1')], f.deps);
    const [retry] = f.requeued;
    // Act
    await deliverWebhooks([rec(message(1), 2, 'm1')], f.deps);
    await deliverWebhooks([rec(retry.body, 1, 'r1')], f.deps);
    // Assert: attempts 1 and 2, one line of retries on
    expect(f.own.map((a) => a.attempt)).toEqual([1, 2]);
    expect(f.requeued.map((r) => r.body.attempts_before)).toEqual([1, 2]);
  });

  it('reports the message back only when its retry cannot be queued', async () => {
    const f = fakes({ status: 500 });
    f.failRequeue(1);
    const [res, warnings] = await logged('warn', () => deliverWebhooks([rec(message(1), 1, 'm1')], f.deps));
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(warnings.map(([message]) => message)).toEqual(['could not queue webhook retries']);
  });

  it('treats any status other than 200 as a failure', async () => {
    for (const status of [201, 204, 302, 404]) {
      const f = fakes({ status });
      const res = await deliverWebhooks([rec(message(1))], f.deps);
      expect(res.batchItemFailures).toEqual([]);
      expect(f.own).toEqual([expect.objectContaining({ outcome: 'failed', status })]);
      expect(f.requeued).toHaveLength(1);
    }
  });

  it('records a retried message that succeeds as an attempt of its own (the event reads as one list)', async () => {
    const f = fakes();
    const res = await deliverWebhooks([rec(message(1), 3, 'm1')], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.own).toEqual([
      expect.objectContaining({ event_id: 'evt-12-1', attempt: 3, outcome: 'delivered' }),
    ]);
    expect(f.logs).toEqual([]);
  });

  it('sends copies of one event in one batch once; both share its fate', async () => {
    // Arrange: two copies of one event (a producer that ran twice), and a failing receiver
    const f = fakes({ status: 500 });
    // Act
    const res = await deliverWebhooks([rec(message(1), 1, 'a'), rec(message(1), 1, 'b')], f.deps);
    // Assert: one attempt, one retry, both messages acknowledged
    expect(f.posted).toHaveLength(1);
    expect(f.requeued).toHaveLength(1);
    expect(res.batchItemFailures).toEqual([]);
  });

  it('sends events with the same order key in queue order, the others in parallel', async () => {
    // Arrange: three events of one workflow among seven unordered ones, each send taking 20 ms
    const f = fakes({ postMs: 20 });
    const ordered = [1, 2, 3].map((n) => ({ ...message(n), order_key: 'wf:9' }));
    const loose = [4, 5, 6, 7, 8, 9, 10].map((n) => message(n));
    // Act
    await deliverWebhooks(
      [ordered[0], loose[0], ordered[1], ...loose.slice(1), ordered[2]].map((m) => rec(m)),
      f.deps,
    );
    // Assert
    const ids = f.posted.map((p) => p.headers['webhook-id']);
    expect(ids.filter((id) => ['evt-12-1', 'evt-12-2', 'evt-12-3'].includes(id))).toEqual([
      'evt-12-1',
      'evt-12-2',
      'evt-12-3',
    ]);
    expect(f.inFlight.max).toBeGreaterThanOrEqual(8);
  });

  it.each([
    ['a deleted task', { task: undefined }, 'skipped', 'task not found'],
    ['a task without a webhook', { task: task() }, 'skipped', 'task has no webhook'],
    ['a refused URL', { refuse: true }, 'refused', 'not public'],
  ])('acknowledges without sending for %s, logged', async (_name, opts, outcome, error) => {
    const f = fakes(opts);
    const res = await deliverWebhooks([rec(message(1))], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(0);
    expect(f.logs).toEqual([[expect.objectContaining({ outcome, error })]]);
  });

  it('does not send again a replayed event that was delivered; one that was not goes after a look later', async () => {
    // Arrange: event 1 was delivered; the producer then ran again for events 1 and 2
    const f = fakes();
    await deliverWebhooks([rec(message(1))], f.deps);
    const replay = (n: number) => ({ ...message(n), replay_since_ms: 0 });
    // Act
    const first = await deliverWebhooks([rec(replay(1), 1, 'r1'), rec(replay(2), 1, 'r2')], f.deps);
    const again = await deliverWebhooks([rec(replay(2), 2, 'r2')], f.deps);
    // Assert: event 1 acknowledged at once; event 2 deferred by the first backoff, then sent
    expect(first.batchItemFailures).toEqual([]);
    expect(f.requeued).toEqual([{ body: { ...replay(2), deferred: true }, delaySeconds: 5 }]);
    expect(again.batchItemFailures).toEqual([]);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-12-1', 'evt-12-2']);
  });

  it('does not send again a message received a third time whose second receive delivered it', async () => {
    const f = fakes();
    await deliverWebhooks([rec(message(1), 2, 'm1')], f.deps);
    const res = await deliverWebhooks([rec(message(1), 3, 'm1')], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(1);
  });

  it('leaves a malformed message to the dead-letter queue', async () => {
    const f = fakes();
    const [res, errors] = await logged('error', () => deliverWebhooks([rec('{nope', 1, 'junk')], f.deps));
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'junk' }]);
    expect(errors).toEqual([['malformed webhook message', { messageId: 'junk' }]]);
    expect(f.posted).toHaveLength(0);
  });

  it('reads a PING task fresh, others from the cache', async () => {
    const f = fakes();
    await deliverWebhooks([rec(message(1)), rec(message(3, 12, 'PING'))], f.deps);
    expect(f.taskReads.filter(([, n]) => n !== undefined)).toEqual([[12, 1700000000]]);
  });

  it('retries (with backoff) when the task cannot be read', async () => {
    const f = fakes();
    f.deps.getTask = async () => {
      throw new Error('throttled');
    };
    const [res, errors] = await logged('error', () => deliverWebhooks([rec(message(1), 3, 'y')], f.deps));
    expect(res.batchItemFailures).toEqual([]);
    expect(errors).toEqual([
      ['webhook delivery failed', { eventId: 'evt-12-1', error: new Error('throttled') }],
    ]);
    expect(f.requeued).toEqual([{ body: { ...message(1), attempts_before: 3 }, delaySeconds: 120 }]);
    expect(f.posted).toHaveLength(0);
    expect(f.own).toEqual([expect.objectContaining({ outcome: 'failed', error: 'internal error' })]);
  });

  it('still acknowledges delivered events when their record cannot be written', async () => {
    const f = fakes();
    f.deps.logDeliveries = async () => {
      throw new Error('table unavailable');
    };
    const [res, errors] = await logged('error', () => deliverWebhooks([rec(message(1), 1, 'm1')], f.deps));
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(1);
    expect(errors).toEqual([
      ['could not record webhook attempts', { count: 1, error: new Error('table unavailable') }],
    ]);
  });
});

describe('an event redriven from the dead-letter queue', () => {
  const redriven = (made: number): WebhookMessage => ({
    ...message(1),
    attempts_before: made,
    redriven_after: made,
  });

  it.each([
    [7, 8, 5],
    [8, 9, 30],
  ])(
    'numbers its attempt after %i made as attempt %i and retries it with a fresh budget (delay %i s)',
    async (made, attempt, seconds) => {
      // Arrange: 7 attempts were made before the redrive
      const f = fakes({ status: 503 });
      // Act
      const res = await deliverWebhooks([rec({ ...redriven(7), attempts_before: made }, 1, 'm1')], f.deps);
      // Assert
      expect(res.batchItemFailures).toEqual([]);
      expect(f.posted).toHaveLength(1);
      expect(f.own[0]).toMatchObject({ attempt, outcome: 'failed', status: 503 });
      expect(f.requeued).toEqual([
        { body: { ...redriven(7), attempts_before: attempt }, delaySeconds: seconds },
      ]);
    },
  );

  it('goes back to the dead-letter queue after its seven new attempts', async () => {
    // Arrange
    const f = fakes({ status: 503 });
    // Act
    const [, warnings] = await logged('warn', () =>
      deliverWebhooks([rec({ ...redriven(7), attempts_before: 13 }, 1, 'm1')], f.deps),
    );
    // Assert
    expect(warnings.map(([message]) => message)).toEqual(['webhook events moved to the dead-letter queue after their attempts']);
    expect(f.own[0]).toMatchObject({ attempt: 14 });
    expect(f.dead).toEqual([{ ...redriven(7), attempts_before: 14 }]);
  });

  it('is left untried once its new budget is used up, like any message', async () => {
    // Arrange: a message received an eighth time (a crash after its seventh new attempt)
    const f = fakes({ status: 503 });
    // Act
    const [, warnings] = await logged('warn', () => deliverWebhooks([rec(redriven(7), 8, 'm1')], f.deps));
    // Assert
    expect(warnings.map(([message]) => message)).toEqual(['webhook events moved to the dead-letter queue after their attempts']);
    expect(f.posted).toEqual([]);
    expect(f.dead).toEqual([{ ...redriven(7), attempts_before: 14 }]);
  });

  it('records a delivery after a redrive as an attempt of its own, with the same webhook-id', async () => {
    // Arrange
    const f = fakes({ status: 200 });
    // Act
    await deliverWebhooks([rec(redriven(7), 1, 'm1')], f.deps);
    // Assert
    expect(f.posted[0].headers['webhook-id']).toBe('evt-12-1');
    expect(f.own).toMatchObject([{ attempt: 8, outcome: 'delivered' }]);
    expect(f.logs).toEqual([]);
  });
});
