import { beforeEach, describe, expect, it } from 'vitest';
import {
  admit,
  CONSECUTIVE_FAILURES,
  failedLately,
  noteAttempt,
  OPEN_MS,
  PROBE_MS,
  resetCircuits,
} from './circuit.ts';
import { deliverWebhooks } from './delivery.ts';
import { fakes, message, rec, task, useDeliveryConfig } from './test-delivery.ts';

useDeliveryConfig();
beforeEach(() => resetCircuits());

const failed = { delivered: false, reached: true };

describe("a task's circuit", () => {
  it('opens after five failures in a row at the receiver, lets one probe out every 5 s, and closes on a delivery', () => {
    // Arrange: four failures, a delivery, then five failures
    for (let i = 0; i < CONSECUTIVE_FAILURES - 1; i++) noteAttempt(1, failed, 1000);
    noteAttempt(1, { delivered: true, reached: true }, 1000);
    expect(admit(1, 1000)).toBe('send');
    for (let i = 0; i < CONSECUTIVE_FAILURES; i++) noteAttempt(1, failed, 2000);
    // Assert: held, then one probe when due, held again until the next one
    expect(admit(1, 2001)).toBe('hold');
    expect(admit(1, 2000 + PROBE_MS)).toBe('probe');
    expect(admit(1, 2000 + PROBE_MS + 1)).toBe('hold');
    expect(admit(1, 2000 + 2 * PROBE_MS)).toBe('probe');
    // Other tasks are not held
    expect(admit(2, 2001)).toBe('send');
    // A delivered probe closes it
    noteAttempt(1, { delivered: true, reached: true }, 2000 + 2 * PROBE_MS);
    expect(admit(1, 2000 + 2 * PROBE_MS + 1)).toBe('send');
  });

  it('forgets the failures OPEN_MS after the last one; a failure that never reached the receiver counts none', () => {
    for (let i = 0; i < CONSECUTIVE_FAILURES; i++) noteAttempt(1, failed, 0);
    noteAttempt(1, { delivered: false, reached: false }, 10);
    expect(admit(1, OPEN_MS - 1)).not.toBe('send');
    expect(admit(1, OPEN_MS)).toBe('send');
    noteAttempt(3, { delivered: false, reached: false }, 0);
    expect(failedLately(3, 1)).toBe(false);
  });

  it('tells a producer to queue a task whose receiver failed lately, even after a delivery', () => {
    noteAttempt(1, failed, 0);
    noteAttempt(1, { delivered: true, reached: true }, 5);
    expect(failedLately(1, 10)).toBe(true);
    expect(failedLately(1, OPEN_MS)).toBe(false);
  });
});

describe('the webhook consumer, one receiver down', () => {
  it("sends no more to it once its circuit is open, while other tasks' events go out, each held one retried", async () => {
    // Arrange: task 12's receiver answers 500, task 13's 200
    const f = fakes();
    f.deps.getTask = async (id) => task(`https://hooks.example.com/${id}`);
    f.deps.post = async (url) => {
      f.posted.push({ url: url.href, headers: {}, body: '' });
      return { status: url.pathname === '/12' ? 500 : 200 };
    };
    const batch = (from: number) =>
      [0, 1, 2, 3, 4].flatMap((i) => [rec(message(from + i, 12)), rec(message(from + i, 13))]);
    // Act: two batches of five events each
    await deliverWebhooks(batch(0), f.deps);
    await deliverWebhooks(batch(10), f.deps);
    // Assert: the first batch's five failures opened the circuit; the second batch sent task 13 only
    const to = (id: number) => f.posted.filter((p) => p.url.endsWith(`/${id}`)).length;
    expect([to(12), to(13)]).toEqual([5, 10]);
    const held = f.own.filter((a) => a.error?.startsWith('circuit open'));
    expect(held.map((a) => a.event_id).sort()).toEqual([10, 11, 12, 13, 14].map((n) => `evt-12-${n}`));
    expect(f.requeued.filter((r) => r.body.task_id === 12)).toHaveLength(10);
    expect(f.requeued.every((r) => r.delaySeconds === 5)).toBe(true);
  });
});

describe('attempts the circuit never holds', () => {
  it("sends an event's first attempt after a redrive whatever the circuit says, and holds a plain one", async () => {
    // Arrange: task 12's receiver fails every request, five times in a row (its circuit opens)
    const f = fakes();
    f.deps.post = async (url) => {
      f.posted.push({ url: url.href, headers: {}, body: '' });
      return { status: 500 };
    };
    await deliverWebhooks([0, 1, 2, 3, 4].map((i) => rec(message(i, 12))), f.deps);
    expect(admit(12, Date.now())).toBe('hold');
    const before = f.posted.length;
    // Act: a redriven event (seven attempts made before the redrive) and a fresh one of the same task
    await deliverWebhooks(
      [rec({ ...message(20, 12), attempts_before: 7, redriven_after: 7 }), rec(message(21, 12))],
      f.deps,
    );
    // Assert: the redriven one was sent (attempt 8), the fresh one held
    expect(f.posted.length).toBe(before + 1);
    const mine = (id: string) => f.own.filter((a) => a.event_id === id);
    expect(mine('evt-12-20')).toEqual([expect.objectContaining({ attempt: 8, outcome: 'failed', status: 500 })]);
    expect(mine('evt-12-21')[0].error).toMatch(/^circuit open/);
  });
});
