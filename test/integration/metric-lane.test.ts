import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { releaseMetricLane, takeMetricLane } from '../../shared/domain/alarms/repository.ts';

/** A metric's serial lane (AP-P10) against DynamoDB Local: one holder at a time, until it lapses. */
describe("a metric's serial lane", () => {
  it('is held by one consumer until it gives it back or it lapses; its holder may take it again', async () => {
    const metric = randomUUID();
    const now = Date.now();
    // Act / Assert: a takes it; b cannot while it lasts; a again can
    expect(await takeMetricLane(1, metric, 'a', now, now + 10_000)).toBe(true);
    expect(await takeMetricLane(1, metric, 'b', now, now + 10_000)).toBe(false);
    expect(await takeMetricLane(1, metric, 'a', now, now + 20_000)).toBe(true);
    // b's release does nothing; a's frees it
    await releaseMetricLane(1, metric, 'b');
    expect(await takeMetricLane(1, metric, 'c', now, now + 10_000)).toBe(false);
    await releaseMetricLane(1, metric, 'a');
    expect(await takeMetricLane(1, metric, 'b', now, now + 10_000)).toBe(true);
    // A lapsed lane is anyone's
    expect(await takeMetricLane(1, metric, 'c', now + 11_000, now + 20_000)).toBe(true);
  });
});
