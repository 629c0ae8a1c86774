import { containerCache } from '../../cache.ts';
import { config } from '../../config/env.ts';
import { perContainer } from '../../container.ts';
import type { Task } from './model.ts';
import { getTask, getTasks } from './repository.ts';

/**
 * Task reads cached (the one cache helper, shared/cache.ts) for `config().taskCacheSeconds`, so the hot
 * path of `/alarm/report` reads the task at most once per task per container per few seconds
 * (behaviour §15). Unknown tasks are cached too (a flood of reports for a deleted task costs no reads).
 * Concurrent misses of one task share one read. Loads are strongly consistent reads.
 *
 * Consequence: a stop, pause, delete or token change takes effect on ingestion within
 * `taskCacheSeconds`. Misses of one turn of the event loop are read together (batchedTaskLoader).
 * Consumers that must see a change made before an event was created (a PING to a
 * new webhook URL) pass `notOlderThan`: an entry loaded before that second is reloaded.
 */
const MAX_ENTRIES = 5_000;

export interface CacheOptions {
  /** Unix seconds: the entry must have been loaded after this second ended. */
  notOlderThan?: number;
  /**
   * Read the task again now (a signature did not match the cached one: its credentials may have been
   * rotated), unless a refresh read it less than a second ago.
   */
  refresh?: boolean;
}

type TaskLoader = (id: number, consistent?: boolean) => Promise<Task | undefined>;

/**
 * A loader that reads the tasks asked for in one turn of the event loop together: one strongly
 * consistent BatchGetItem (one GetItem for a single task). A consumer batch of alarms of many tasks
 * costs one read request instead of one per task.
 */
export function batchedTaskLoader(
  deps: { getTask: TaskLoader; getTasks: (ids: number[], consistent: boolean) => Promise<Task[]> } = {
    getTask,
    getTasks,
  },
): TaskLoader {
  let pending: Map<number, { done: (t: Task | undefined) => void; fail: (e: unknown) => void }[]> | undefined;
  const flush = async () => {
    const batch = pending as NonNullable<typeof pending>;
    pending = undefined;
    const ids = [...batch.keys()];
    try {
      const found =
        ids.length === 1
          ? new Map([[ids[0], await deps.getTask(ids[0], true)]])
          : new Map((await deps.getTasks(ids, true)).map((t) => [t.id, t]));
      for (const [id, waiters] of batch) for (const w of waiters) w.done(found.get(id));
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.fail(err);
    }
  };
  return (id) =>
    new Promise((done, fail) => {
      if (!pending) {
        pending = new Map();
        queueMicrotask(() => void flush());
      }
      const waiters = pending.get(id);
      if (waiters) waiters.push({ done, fail });
      else pending.set(id, [{ done, fail }]);
    });
}

const loaderOf = perContainer(() => batchedTaskLoader());
const loadTask: TaskLoader = (id, consistent) => loaderOf()(id, consistent);

const tasks = containerCache<number, Task | undefined>({
  ttlMs: () => config().taskCacheSeconds * 1000,
  maxEntries: MAX_ENTRIES,
  load: (id) => loadTask(id, true),
});

export async function getTaskCached(
  id: number,
  opts: CacheOptions = {},
  deps: { getTask: TaskLoader } = { getTask: loadTask },
): Promise<Task | undefined> {
  return tasks.get(id, {
    ...(opts.notOlderThan === undefined ? {} : { notOlderThanMs: (opts.notOlderThan + 1) * 1000 }),
    refresh: opts.refresh === true,
    load: (key) => deps.getTask(key, true),
  });
}

/** Drops cached tasks (tests). */
export function clearTaskCache(): void {
  tasks.clear();
}
