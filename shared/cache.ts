import { nowMs } from './clock.ts';
import { perContainer } from './container.ts';

/**
 * The one cache of the service: values read from the table, kept in module scope (one per container,
 * `perContainer`) for a number of seconds on the service clock. Concurrent misses of one key share
 * one read; a failed read is forgotten at once (the next get reads again); absent values (undefined)
 * are cached like any other, so a flood of requests for something deleted costs no reads. At most
 * `maxEntries` keys are kept (the oldest loaded goes first).
 */
export interface ContainerCache<K, V> {
  /**
   * The cached value, or a fresh read when none is cached, it is older than the cache time, or it was
   * loaded before `notOlderThanMs` (service time). `refresh` reads again now, unless a refresh read
   * it less than `minRefreshMs` ago (so a burst of refreshes costs one read). `load` reads in place of
   * the cache's own loader (a test's stand-in).
   */
  get(
    key: K,
    opts?: { notOlderThanMs?: number; refresh?: boolean; load?: (key: K) => Promise<V> },
  ): Promise<V>;
  /** Forgets everything (tests). */
  clear(): void;
}

interface Entry<V> {
  value: Promise<V>;
  /** Service time (ms) when the read started. */
  loadedAt: number;
  /** Whether a `refresh` forced the read. */
  refreshed: boolean;
}

export function containerCache<K, V>(options: {
  /** How long a value is served, in ms (read on every get: configuration may change it). */
  ttlMs: () => number;
  maxEntries: number;
  load: (key: K) => Promise<V>;
  /** How often a key may be refreshed (ms; default 1,000). */
  minRefreshMs?: number;
}): ContainerCache<K, V> {
  const minRefreshMs = options.minRefreshMs ?? 1_000;
  const entries = perContainer(() => new Map<K, Entry<V>>());
  return {
    get(key, opts = {}) {
      const cache = entries();
      const now = nowMs();
      const hit = cache.get(key);
      if (
        hit &&
        now - hit.loadedAt < options.ttlMs() &&
        (opts.notOlderThanMs === undefined || hit.loadedAt >= opts.notOlderThanMs) &&
        (!opts.refresh || (hit.refreshed && now - hit.loadedAt < minRefreshMs))
      ) {
        return hit.value;
      }
      const entry: Entry<V> = {
        value: (opts.load ?? options.load)(key),
        loadedAt: now,
        refreshed: opts.refresh === true,
      };
      cache.delete(key);
      if (cache.size >= options.maxEntries) cache.delete(cache.keys().next().value as K);
      cache.set(key, entry);
      entry.value.catch(() => {
        if (cache.get(key) === entry) cache.delete(key);
      });
      return entry.value;
    },
    clear() {
      entries().clear();
    },
  };
}
