import { describe, expect, it } from 'vitest';
import { retryDelaySeconds } from './retry.ts';

describe('retryDelaySeconds', () => {
  it('follows the backoff per retry, then 0 once retries are used up', () => {
    const b = [5, 30, 120, 600, 1800, 3600];
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((a) => retryDelaySeconds(a, b))).toEqual([
      5, 30, 120, 600, 1800, 3600, 0, 0,
    ]);
    expect(retryDelaySeconds(1, [])).toBe(0);
  });

  it('rounds to whole seconds within what SQS takes (0 to 12 hours)', () => {
    expect(retryDelaySeconds(1, [2.6])).toBe(3);
    expect(retryDelaySeconds(1, [-5])).toBe(0);
    expect(retryDelaySeconds(1, [100_000])).toBe(43_200);
    expect(retryDelaySeconds(0, [7, 9])).toBe(7);
  });
});
