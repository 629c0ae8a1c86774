import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { advanceClock, nowSeconds } from '../../clock.ts';
import { resetConfig } from '../../config/env.ts';
import type { Task } from './model.ts';
import { batchedTaskLoader, clearTaskCache, getTaskCached } from './task-cache.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  process.env.TASK_CACHE_SECONDS = '5';
  resetConfig();
});
beforeEach(() => clearTaskCache());
afterEach(() => vi.useRealTimers());

function loader(result: () => Task | undefined) {
  return { getTask: vi.fn(async (_id: number, _consistent?: boolean) => result()) };
}

describe('getTaskCached', () => {
  it('reads once per task within the cache time, with a consistent read', async () => {
    // Arrange
    const deps = loader(() => ({ id: 1 }) as Task);
    // Act
    await getTaskCached(1, {}, deps);
    await getTaskCached(1, {}, deps);
    await getTaskCached(2, {}, deps);
    // Assert
    expect(deps.getTask).toHaveBeenCalledTimes(2);
    expect(deps.getTask).toHaveBeenCalledWith(1, true);
  });

  it('reads again once the cache time has passed (service clock)', async () => {
    const deps = loader(() => ({ id: 1 }) as Task);
    await getTaskCached(1, {}, deps);
    advanceClock(6);
    await getTaskCached(1, {}, deps);
    expect(deps.getTask).toHaveBeenCalledTimes(2);
  });

  it('shares one read between concurrent misses and caches unknown tasks', async () => {
    const deps = loader(() => undefined);
    const results = await Promise.all([getTaskCached(9, {}, deps), getTaskCached(9, {}, deps)]);
    await getTaskCached(9, {}, deps);
    expect(results).toEqual([undefined, undefined]);
    expect(deps.getTask).toHaveBeenCalledTimes(1);
  });

  it('does not keep a failed read', async () => {
    let fail = true;
    const deps = {
      getTask: vi.fn(async () => {
        if (fail) throw new Error('throttled');
        return { id: 3 } as Task;
      }),
    };
    await expect(getTaskCached(3, {}, deps)).rejects.toThrow('throttled');
    fail = false;
    await expect(getTaskCached(3, {}, deps)).resolves.toEqual({ id: 3 });
  });

  it('reloads an entry read before `notOlderThan` ended', async () => {
    // Arrange: an entry loaded in second S
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2030-01-01T00:00:00.500Z'));
    const s = nowSeconds();
    const deps = loader(() => ({ id: 4 }) as Task);
    await getTaskCached(4, {}, deps);
    // Act: an event created in second S needs a read after S; one from S-1 does not
    await getTaskCached(4, { notOlderThan: s - 1 }, deps);
    const callsBefore = deps.getTask.mock.calls.length;
    vi.setSystemTime(new Date('2030-01-01T00:00:01.100Z'));
    await getTaskCached(4, { notOlderThan: s }, deps);
    await getTaskCached(4, { notOlderThan: s }, deps);
    // Assert
    expect(callsBefore).toBe(1);
    expect(deps.getTask).toHaveBeenCalledTimes(2);
  });

  it('reads a cached task again on `refresh` (a rotated credential), at most once a second', async () => {
    // Arrange: cached just now
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2030-01-01T00:00:00.000Z'));
    const deps = loader(() => ({ id: 5 }) as Task);
    await getTaskCached(5, {}, deps);
    // Act: a signature did not match, twice in a burst, then again a second later
    await getTaskCached(5, { refresh: true }, deps);
    await getTaskCached(5, { refresh: true }, deps);
    const inBurst = deps.getTask.mock.calls.length;
    vi.setSystemTime(new Date('2030-01-01T00:00:01.200Z'));
    await getTaskCached(5, { refresh: true }, deps);
    // Assert
    expect(inBurst).toBe(2);
    expect(deps.getTask).toHaveBeenCalledTimes(3);
    // A plain read keeps the refreshed entry.
    await getTaskCached(5, {}, deps);
    expect(deps.getTask).toHaveBeenCalledTimes(3);
  });
});

describe('batchedTaskLoader', () => {
  it('reads the tasks asked for in one turn with one consistent batch read, a single one with GetItem', async () => {
    // Arrange
    const deps = {
      getTask: vi.fn(async (id: number, _consistent?: boolean) => ({ id }) as Task),
      getTasks: vi.fn(async (ids: number[], _consistent: boolean) =>
        ids.filter((id) => id !== 3).map((id) => ({ id }) as Task),
      ),
    };
    const load = batchedTaskLoader(deps);
    // Act: three tasks (one unknown) and a repeat, in one turn; then one alone
    const [a, b, c, again] = await Promise.all([load(1), load(2), load(3), load(1)]);
    const alone = await load(9);
    // Assert
    expect([a?.id, b?.id, c, again?.id]).toEqual([1, 2, undefined, 1]);
    expect(deps.getTasks).toHaveBeenCalledTimes(1);
    expect(deps.getTasks).toHaveBeenCalledWith([1, 2, 3], true);
    expect(alone?.id).toBe(9);
    expect(deps.getTask).toHaveBeenCalledWith(9, true);
  });

  it('fails every waiter of a failed read, and the next turn reads afresh', async () => {
    let fail = true;
    const deps = {
      getTask: vi.fn(async (id: number) => ({ id }) as Task),
      getTasks: vi.fn(async (ids: number[]) => {
        if (fail) throw new Error('throttled');
        return ids.map((id) => ({ id }) as Task);
      }),
    };
    const load = batchedTaskLoader(deps);
    const results = await Promise.allSettled([load(1), load(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect((await Promise.all([load(1), load(2)])).map((t) => t?.id)).toEqual([1, 2]);
  });
});
