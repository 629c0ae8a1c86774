import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limit.ts';

describe('RateLimiter (token bucket per task)', () => {
  it('takes a batch all or none; a batch above the limit needs a full bucket', () => {
    let now = 0;
    const limiter = new RateLimiter(() => now);
    expect(limiter.take(1, 5, 3)).toBe(true);
    expect(limiter.take(1, 5, 3)).toBe(false); // 2 left: nothing taken
    expect(limiter.take(1, 5, 2)).toBe(true);
    now += 1_000;
    expect(limiter.take(1, 5, 50)).toBe(true); // full bucket: a notification of 50 alerts passes
    expect(limiter.take(1, 5, 1)).toBe(false);
  });

  it('allows a burst of `limit`, then refuses until tokens refill', () => {
    // Arrange
    let now = 1_000_000;
    const limiter = new RateLimiter(() => now);
    // Act
    const burst = Array.from({ length: 6 }, () => limiter.take(1, 5));
    now += 199; // 0.995 token
    const early = limiter.take(1, 5);
    now += 1; // 1 token
    const refilled = limiter.take(1, 5);
    // Assert
    expect(burst).toEqual([true, true, true, true, true, false]);
    expect(early).toBe(false);
    expect(refilled).toBe(true);
  });

  it('sustains `limit` per second and never stores more than `limit` tokens', () => {
    let now = 0;
    const limiter = new RateLimiter(() => now);
    now = 60_000; // a long idle period
    const allowed = Array.from({ length: 20 }, () => limiter.take(7, 10)).filter(Boolean).length;
    expect(allowed).toBe(10);
    let more = 0;
    for (let i = 0; i < 10; i++) {
      now += 100;
      if (limiter.take(7, 10)) more++;
    }
    expect(more).toBe(10);
  });

  it('keeps tasks apart', () => {
    const limiter = new RateLimiter(() => 0);
    expect(limiter.take(1, 1)).toBe(true);
    expect(limiter.take(1, 1)).toBe(false);
    expect(limiter.take(2, 1)).toBe(true);
  });

  it('survives a clock that steps back', () => {
    let now = 5_000;
    const limiter = new RateLimiter(() => now);
    expect(limiter.take(1, 1)).toBe(true);
    now = 1_000;
    expect(limiter.take(1, 1)).toBe(false);
  });
});
