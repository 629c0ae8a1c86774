import { describe, expect, it } from 'vitest';
import { batchPerTurn } from './batch.ts';

describe('batchPerTurn', () => {
  it('answers the calls of one turn with one call, each its own output, in order', async () => {
    // Arrange
    const calls: number[][] = [];
    const double = batchPerTurn(async (xs: number[]) => {
      calls.push(xs);
      return xs.map((x) => x * 2);
    });
    // Act: three calls in one turn, then one in a later turn
    const first = await Promise.all([double(1), double(2), double(3)]);
    const later = await double(4);
    // Assert
    expect(first).toEqual([2, 4, 6]);
    expect(later).toBe(8);
    expect(calls).toEqual([[1, 2, 3], [4]]);
  });

  it('fails every call of a turn when the shared call fails', async () => {
    const broken = batchPerTurn(async (_xs: number[]): Promise<number[]> => {
      throw new Error('table down');
    });
    const results = await Promise.allSettled([broken(1), broken(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
