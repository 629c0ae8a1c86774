import { describe, expect, it } from 'vitest';
import { HistoryIdAllocator } from './ids.ts';

describe('HistoryIdAllocator', () => {
  it('hands out ids from reserved blocks, one reservation per block, even under concurrency', async () => {
    let counter = 0;
    const calls: number[] = [];
    const alloc = new HistoryIdAllocator(async (size) => {
      calls.push(size);
      await new Promise((r) => setTimeout(r, 5));
      counter += size;
      return counter;
    }, 10);
    const ids = await Promise.all(Array.from({ length: 25 }, () => alloc.nextId()));
    expect(new Set(ids).size).toBe(25);
    expect(Math.min(...ids)).toBe(1);
    expect(Math.max(...ids)).toBe(25);
    expect(calls).toEqual([10, 10, 10]);
  });

  it('skips what another container took: ids stay unique across allocators', async () => {
    let counter = 0;
    const reserve = async (size: number) => {
      counter += size;
      return counter;
    };
    const a = new HistoryIdAllocator(reserve, 5);
    const b = new HistoryIdAllocator(reserve, 5);
    const ids = [await a.nextId(), await b.nextId(), await a.nextId(), await b.nextId()];
    expect(ids).toEqual([1, 6, 2, 7]);
  });

  it('surfaces a failed reservation and recovers on the next call', async () => {
    let fail = true;
    const alloc = new HistoryIdAllocator(async () => {
      if (fail) throw new Error('throttled');
      return 3;
    }, 3);
    await expect(alloc.nextId()).rejects.toThrow('throttled');
    fail = false;
    expect(await alloc.nextId()).toBe(1);
  });
});
