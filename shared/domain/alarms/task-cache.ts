import { nowMs } from '../../clock.ts';
import { config } from '../../config/env.ts';
import type { Task } from '../tasks/model.ts';
import { getTask } from '../tasks/repository.ts';

/**
 * Task reads cached in module scope (one per container) for `config().taskCacheSeconds`, so the hot
 * path of `/alarm/report` reads the task at most once per task per container per few seconds
 * (behavior 12). Unknown tasks are cached too (a flood of reports for a deleted task costs no reads).
 * Concurrent misses of one task share one read. Loads are strongly consistent reads.
 *
 * Consequence: a stop, pause, delete or token change takes effect on ingestion within
 * `taskCacheSeconds`. Consumers that must see a change made before an event was created (a PING to a
 * new webhook URL) pass `notOlderThan`: an entry loaded before that second is reloaded.
 */
interface Entry {
  value: Promise<Task | undefined>;
  /** Service time (ms) when the read started. */
  loadedAt: number;
}

const MAX_ENTRIES = 5_000;
const cache = new Map<number, Entry>();

export interface CacheOptions {
  /** Unix seconds: the entry must have been loaded after this second ended. */
  notOlderThan?: number;
}

export async function getTaskCached(
  id: number,
  opts: CacheOptions = {},
  deps: { getTask: (id: number, consistent?: boolean) => Promise<Task | undefined> } = { getTask },
): Promise<Task | undefined> {
  const now = nowMs();
  const hit = cache.get(id);
  const fresh =
    hit &&
    now - hit.loadedAt < config().taskCacheSeconds * 1000 &&
    (opts.notOlderThan === undefined || hit.loadedAt >= (opts.notOlderThan + 1) * 1000);
  if (hit && fresh) return hit.value;
  const entry: Entry = { value: deps.getTask(id, true), loadedAt: now };
  cache.delete(id);
  if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as number);
  cache.set(id, entry);
  entry.value.catch(() => {
    if (cache.get(id) === entry) cache.delete(id);
  });
  return entry.value;
}

/** Drops cached tasks (tests). */
export function clearTaskCache(): void {
  cache.clear();
}
