import { describe, expect, it } from 'vitest';
import { deliverNow, sendEventNow } from './deliver-now.ts';
import { logged } from '../../testing/logs.ts';
import { bundle, fakes, message, useDeliveryConfig } from './test-delivery.ts';

useDeliveryConfig();

describe("deliverNow (a producer's first attempt)", () => {
  it('sends every event of the bundles at once and queues nothing when all are delivered', async () => {
    const f = fakes();
    await deliverNow([bundle([1, 2], 21)], f.deps);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-21-1', 'evt-21-2']);
    expect(f.logs.flat().map((a) => [a.event_id, a.attempt, a.outcome])).toEqual([
      ['evt-21-1', 1, 'delivered'],
      ['evt-21-2', 1, 'delivered'],
    ]);
    expect([f.requeued, f.bundled]).toEqual([[], []]);
  });

  it("queues a failed event on its own after the first backoff, then queues the task's events untried for a while", async () => {
    const f = fakes({ status: (n) => (n === 1 ? 503 : 200) });
    // Act: the first event fails; a later batch of the same task; another task's batch
    await deliverNow([bundle([1, 2], 22)], f.deps);
    const postedFirst = f.posted.length;
    await deliverNow([bundle([3], 22), bundle([1], 23)], f.deps);
    // Assert: attempt 1 recorded, the retry counts it; the cooling task's bundle goes to the queue as is
    expect(f.own).toEqual([expect.objectContaining({ event_id: 'evt-22-1', attempt: 1, outcome: 'failed' })]);
    expect(f.requeued).toEqual([
      {
        delaySeconds: 5,
        body: expect.objectContaining({ kind: 'webhook', event_id: 'evt-22-1', attempts_before: 1 }),
      },
    ]);
    expect(f.bundled).toEqual([bundle([3], 22)]);
    expect(postedFirst).toBe(2);
    expect(f.posted.slice(postedFirst).map((p) => p.headers['webhook-id'])).toEqual(['evt-23-1']);
  });

  it('cools a task off only when its receiver failed, not when the task could not be read', async () => {
    const f = fakes();
    const read = f.deps.getTask;
    f.deps.getTask = async () => {
      throw new Error('throttled');
    };
    const [, errors] = await logged('error', () => deliverNow([bundle([1], 27)], f.deps));
    expect(errors).toEqual([
      ['webhook delivery failed', { eventId: 'evt-27-1', error: new Error('throttled') }],
    ]);
    f.deps.getTask = read;
    await deliverNow([bundle([2], 27)], f.deps);
    expect(f.own).toEqual([
      expect.objectContaining({ event_id: 'evt-27-1', outcome: 'failed', error: 'internal error' }),
    ]);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-27-2']);
    expect(f.bundled).toEqual([]);
  });

  it('leaves replayed events to the webhook consumer, which looks up whether they went out', async () => {
    const f = fakes();
    const replayed = bundle([1], 24, { replay_since_ms: 1000 });
    await deliverNow([{ ...replayed, events: [...replayed.events, ...bundle([2], 24).events] }], f.deps);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-24-2']);
    expect(f.bundled).toEqual([replayed]);
  });

  it('queues, unsent and in order, what a slow receiver leaves after the time budget', async () => {
    // Arrange: a receiver taking 600 ms; five events of one order key (one lane), one without
    const f = fakes({ postMs: 600 });
    const lane = bundle([1, 2, 3, 4, 5], 28, { order_key: 'wf:9' });
    const solo = bundle([6], 28);
    // Act
    await deliverNow([{ ...lane, events: [...lane.events, ...solo.events] }], f.deps);
    // Assert: the lane's first two start within the 1 s budget (at 0 and 600 ms), the rest waits
    expect(f.posted.map((p) => p.headers['webhook-id']).sort()).toEqual(['evt-28-1', 'evt-28-2', 'evt-28-6']);
    expect(f.bundled).toEqual([{ ...lane, events: lane.events.slice(2) }]);
    expect(f.requeued).toEqual([]);
  });

  it('throws when a failed event cannot be queued (the producer runs again), or when queuing what waits fails', async () => {
    const failing = fakes({ status: 500 });
    failing.failRequeue(1);
    const [refused, warnings] = await logged('warn', () =>
      deliverNow([bundle([1], 25)], failing.deps).then(
        () => undefined,
        (err: Error) => err,
      ),
    );
    expect(refused?.message).toMatch(/could not queue/);
    expect(warnings.map(([m, a]) => [m, a.count])).toEqual([['could not queue webhook retries', 1]]);
    // What waits for the queue cannot be queued: the fresh event still goes out, and is recorded, first
    const waiting = fakes();
    waiting.failRequeue(1);
    const mixed = bundle([1], 26, { replay_since_ms: 0 });
    mixed.events.push(...bundle([2], 26).events);
    await expect(deliverNow([mixed], waiting.deps)).rejects.toThrow('queue down');
    expect(waiting.logs.flat().map((a) => [a.event_id, a.outcome])).toEqual([['evt-26-2', 'delivered']]);
  });
});

describe('sendEventNow (test-send)', () => {
  it('makes one signed attempt, records a delivered one in the log and returns it', async () => {
    // Arrange
    const f = fakes({ status: 200 });
    // Act
    const attempt = await sendEventNow(message(5, 12, 'PING'), f.deps);
    // Assert
    expect(attempt).toMatchObject({ event_id: 'evt-12-5', attempt: 1, outcome: 'delivered', status: 200 });
    expect(f.posted).toHaveLength(1);
    expect(f.logs).toEqual([[attempt]]);
    expect([f.requeued, f.dead]).toEqual([[], []]);
  });

  it('records a failed attempt on its own and does not retry it', async () => {
    // Arrange
    const f = fakes({ status: 500 });
    // Act
    const attempt = await sendEventNow(message(6, 12, 'PING'), f.deps);
    // Assert
    expect(attempt).toMatchObject({ outcome: 'failed', status: 500, error: 'HTTP 500' });
    expect(f.own).toEqual([attempt]);
    expect(f.requeued).toEqual([]);
    expect(f.dead).toEqual([]);
  });
});
