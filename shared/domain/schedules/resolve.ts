import { containerCache } from '../../cache.ts';
import { nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { loadTimeline, REACH_SECONDS, type TimelineData } from './answers.ts';
import type { OncallAnswer, OncallChannel, OncallReceiver } from './model.ts';
import { answerAt } from './timeline.ts';

/**
 * Receivers that name a schedule, resolved when a message is made (API guide §5.3): who the schedule
 * has on call at that instant, by the one computation (timeline.ts). Schedules are cached per
 * container like tasks (`TASK_CACHE_SECONDS`): a message costs no read while its schedule is cached,
 * and two Queries of the schedule's collection (its versions, its overrides) when it is not; an edit
 * reaches the alarm path within the cache time.
 */
const timelines = containerCache<number, TimelineData>({
  ttlMs: () => config().taskCacheSeconds * 1000,
  maxEntries: 1_000,
  load: (id) => loadTimeline(id, nowSeconds() - REACH_SECONDS),
});

/** Drops cached schedules (tests). */
export function clearScheduleCache(): void {
  timelines.clear();
}

export type OncallResolver = (receivers: OncallReceiver[], at: number) => Promise<OncallAnswer[]>;

/**
 * One answer per schedule named (receivers naming the same schedule share it, their channels
 * joined): the people on call at `at`, the source and the shift. A schedule that no longer exists
 * answers nobody, marked `missing`.
 */
export const resolveOncall: OncallResolver = async (receivers, at) => {
  const channels = new Map<number, Set<OncallChannel>>();
  for (const r of receivers) {
    const set = channels.get(r.schedule_id) ?? new Set<OncallChannel>();
    for (const c of r.channels) set.add(c);
    channels.set(r.schedule_id, set);
  }
  return Promise.all(
    [...channels].map(async ([id, chs]): Promise<OncallAnswer> => {
      const data = await timelines.get(id);
      const base = { schedule_id: id, at, channels: [...chs] };
      if (data.versions.length === 0)
        return { ...base, uids: [], source: { kind: 'none' }, shift: { start: at, end: at }, missing: true };
      const s = answerAt(data.versions, data.overrides, at);
      return { ...base, uids: s.uids, source: s.source, shift: { start: s.start, end: s.end } };
    }),
  );
};
