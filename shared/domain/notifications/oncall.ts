import type { OncallAnswer } from '../schedules/model.ts';
import { type OncallResolver, resolveOncall } from '../schedules/resolve.ts';
import type { ReceiverSet } from './receivers.ts';

/**
 * Receivers that name a schedule (`oncall`), resolved when the message is made: each set's on-call
 * receivers become the people the schedule has on call at `at`, added to the set's user channels
 * (so they are merged and de-duplicated with everyone else, one message per channel). The answers
 * (nobody on call included) travel with the message's notifications, which record them: see
 * receivers.ts `channelJobs`. Sets that name no schedule cost nothing.
 */
export async function withOncall(
  sets: ReceiverSet[],
  at: number,
  resolve: OncallResolver = resolveOncall,
): Promise<{ sets: ReceiverSet[]; oncall: OncallAnswer[] }> {
  const named = sets.flatMap((s) => s.oncall ?? []);
  if (named.length === 0) return { sets, oncall: [] };
  const oncall = await resolve(named, at);
  const bySchedule = new Map(oncall.map((a) => [a.schedule_id, a]));
  const expanded = sets.map((s): ReceiverSet => {
    if (!s.oncall?.length) return s;
    const channels = { ...s.channels };
    for (const o of s.oncall) {
      const uids = bySchedule.get(o.schedule_id)?.uids ?? [];
      if (uids.length === 0) continue;
      for (const ch of o.channels) channels[ch] = [...new Set([...(channels[ch] ?? []), ...uids])];
    }
    return { ...s, channels };
  });
  return { sets: expanded, oncall };
}
