import { describe, expect, it } from 'vitest';
import type { WebhookMessage } from '../../contracts/messages.ts';
import { deliverWebhooks } from './delivery.ts';
import { logged } from '../../testing/logs.ts';
import { bundle, failedAttempt, fakes, message, rec, useDeliveryConfig } from './test-delivery.ts';

useDeliveryConfig();

describe('deliverWebhooks: bundles', () => {
  it('sends every event of a bundle and logs them in one write', async () => {
    const f = fakes();
    const res = await deliverWebhooks([rec(bundle([1, 2, 3]), 1, 'b1')], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted.map((p) => p.headers['webhook-id']).sort()).toEqual(['evt-12-1', 'evt-12-2', 'evt-12-3']);
    expect(f.logs).toHaveLength(1);
    expect(f.logs[0].map((a) => [a.event_id, a.attempt, a.outcome])).toEqual(
      expect.arrayContaining([
        ['evt-12-1', 1, 'delivered'],
        ['evt-12-2', 1, 'delivered'],
        ['evt-12-3', 1, 'delivered'],
      ]),
    );
  });

  it('acknowledges the bundle and queues a failed event again on its own, after the first backoff', async () => {
    // Arrange: the second POST fails
    const f = fakes({ status: (n) => (n === 2 ? 503 : 200) });
    // Act
    const res = await deliverWebhooks([rec(bundle([1, 2, 3]), 1, 'b1')], f.deps);
    // Assert
    expect(res.batchItemFailures).toEqual([]);
    const failedId = f.own[0].event_id;
    expect(f.own).toEqual([expect.objectContaining({ attempt: 1, outcome: 'failed', status: 503 })]);
    expect(f.requeued).toEqual([
      {
        delaySeconds: 5,
        body: expect.objectContaining({
          kind: 'webhook',
          event_id: failedId,
          task_id: 12,
          attempts_before: 1,
        }),
      },
    ]);
    expect(f.logs[0].map((a) => a.event_id)).not.toContain(failedId);
  });

  it('counts the bundle attempt in a queued event: seven attempts in all, then the dead-letter queue', async () => {
    // Arrange: the event a bundle queued again (attempt 1 was in the bundle)
    const f = fakes({ status: 500 });
    const m: WebhookMessage = { ...message(2), attempts_before: 1 };
    // Act: its receive 1 is attempt 2, and each retry is a new message carrying the attempts made
    const results = [await deliverWebhooks([rec(m, 1, 'q')], f.deps)];
    const [, warnings] = await logged('warn', async () => {
      while (f.dead.length === 0 && f.requeued.length < 10) {
        const next = f.requeued.at(-1)?.body as WebhookMessage;
        results.push(await deliverWebhooks([rec({ ...next, retry_at_ms: undefined }, 1, 'q')], f.deps));
      }
    });
    expect(warnings.map(([message]) => message)).toEqual(['webhook events moved to the dead-letter queue after their attempts']);
    // Assert: attempts 2 to 7, each retry delayed by its backoff, then the dead-letter queue
    expect(f.own.map((a) => a.attempt)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(f.requeued.map((r) => r.delaySeconds)).toEqual([30, 120, 600, 900, 900]);
    expect(f.dead).toEqual([expect.objectContaining({ event_id: 'evt-12-2', attempts_before: 7 })]);
    // After five failures in a row the task's circuit is open, but an event's last attempt is sent
    expect(f.posted).toHaveLength(6);
    expect(f.own[5]).toMatchObject({ attempt: 7, outcome: 'failed' });
    expect(f.own[5].error).not.toMatch(/^circuit open/);
    for (const r of results) expect(r.batchItemFailures).toEqual([]);
  });

  it('returns the whole bundle when its retries cannot be queued; received again, it sends only the undelivered', async () => {
    // Arrange: event 2 fails once, and the queue refuses the retry
    const f = fakes({ status: (n) => (n === 2 ? 500 : 200) });
    f.failRequeue(1);
    const b = bundle([1, 2, 3]);
    // Act
    const [first, warnings] = await logged('warn', () => deliverWebhooks([rec(b, 1, 'b1')], f.deps));
    expect(warnings.map(([m, a]) => [m, a.count])).toEqual([['could not queue webhook retries', 1]]);
    const sentFirst = f.posted.map((p) => p.headers['webhook-id']);
    const again = await deliverWebhooks([rec(b, 2, 'b1')], f.deps);
    // Assert
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: 'b1' }]);
    expect(f.requeued).toEqual([]);
    expect(again.batchItemFailures).toEqual([]);
    const failedId = f.own[0].event_id;
    expect(f.posted.slice(sentFirst.length).map((p) => p.headers['webhook-id'])).toEqual([failedId]);
    expect(f.searches.every(([, searchLog]) => searchLog)).toBe(true);
  });

  it('defers a fresh replay in a bundle once, then sends it unless it was delivered', async () => {
    const f = fakes();
    // Act: a replayed bundle; the event comes back once, deferred
    const res = await deliverWebhooks([rec(bundle([4], 12, { replay_since_ms: 0 }), 1, 'b')], f.deps);
    const [queued] = f.requeued;
    const later = await deliverWebhooks([rec(queued.body, 1, 'd')], f.deps);
    // Assert
    expect(res.batchItemFailures).toEqual([]);
    expect(queued).toEqual({
      delaySeconds: 5,
      body: expect.objectContaining({ event_id: 'evt-12-4', deferred: true }),
    });
    expect(queued.body.attempts_before ?? 0).toBe(0);
    expect(later.batchItemFailures).toEqual([]);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-12-4']);
    expect(f.requeued).toHaveLength(1);
  });

  it('continues the recorded attempts of a replayed event: attempt 2, retried after the second backoff', async () => {
    // Arrange: attempt 1 of event 7 failed (its retry could not be queued; the producer ran again)
    const f = fakes({ status: 500 });
    f.own.push(failedAttempt('evt-12-7', 1, 1_700_000_000_500));
    // Act: the replay is deferred once, then sent
    await deliverWebhooks([rec(bundle([7], 12, { replay_since_ms: 1_700_000_000_000 }), 1, 'r')], f.deps);
    await deliverWebhooks([rec(f.requeued[0].body, 1, 'd')], f.deps);
    // Assert
    expect(f.own.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(f.requeued).toHaveLength(2);
    expect(f.requeued[1]).toMatchObject({ delaySeconds: 30, body: { attempts_before: 2 } });
  });

  it('parks a replayed event whose recorded attempts used the retries up; a replay without attempts goes on', async () => {
    // Arrange: event 8 failed seven times since the replay's time; event 9 has no attempt
    const f = fakes({ status: 500 });
    const since = 1_700_000_000_000;
    for (let n = 1; n <= 7; n++) f.own.push(failedAttempt('evt-12-8', n, since + n));
    // Act: the replayed bundle; event 8 comes back on its own, event 9 deferred once; both received
    const [first, warnings] = await logged('warn', () =>
      deliverWebhooks([rec(bundle([8, 9], 12, { replay_since_ms: since }), 1, 'r')], f.deps),
    );
    expect(warnings.map(([message]) => message)).toEqual(['webhook events moved to the dead-letter queue after their attempts']);
    const eight = f.requeued.find((q) => q.body.event_id === 'evt-12-8');
    const nine = f.requeued.find((q) => q.body.event_id === 'evt-12-9');
    await deliverWebhooks([rec(nine?.body ?? 'x', 1, 'd9')], f.deps);
    // Assert: event 8 is never sent again and goes to the dead-letter queue untried; event 9 makes its
    // attempt 1, retried after the first backoff
    expect(first.batchItemFailures).toEqual([]);
    expect(eight).toBeUndefined();
    expect(f.dead).toEqual([expect.objectContaining({ event_id: 'evt-12-8', attempts_before: 7 })]);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-12-9']);
    expect(f.own.slice(7).map((a) => [a.event_id, a.attempt])).toEqual([['evt-12-9', 1]]);
    expect(f.requeued.at(-1)).toMatchObject({
      delaySeconds: 5,
      body: { event_id: 'evt-12-9', attempts_before: 1 },
    });
  });

  it('sends the unordered events of one bundle in parallel', async () => {
    const f = fakes({ postMs: 50 });
    await deliverWebhooks([rec(bundle([1, 2, 3, 4]), 1, 'b')], f.deps);
    expect(f.posted).toHaveLength(4);
    expect(f.inFlight.max).toBe(4);
  });

  it('leaves a bundle with a malformed event to the dead-letter queue, sending none of it', async () => {
    const f = fakes();
    const b = bundle([1, 2]);
    (b.events[1] as { event_id?: string }).event_id = undefined;
    const [res, errors] = await logged('error', () => deliverWebhooks([rec(b, 1, 'bad-bundle')], f.deps));
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'bad-bundle' }]);
    expect(errors).toEqual([['malformed webhook message', { messageId: 'bad-bundle' }]]);
    expect(f.posted).toHaveLength(0);
  });
});
