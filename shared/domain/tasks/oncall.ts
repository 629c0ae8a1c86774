import { nowSeconds } from '../../clock.ts';
import { loadTimeline } from '../schedules/answers.ts';
import { DAY_SECONDS } from '../schedules/model.ts';
import { getSchedules } from '../schedules/repository.ts';
import { coveragePct, gapsOf, timeline } from '../schedules/timeline.ts';
import { summaryPerson } from '../directory/model.ts';
import { getUsers } from '../directory/repository.ts';
import { taskForUser } from './access.ts';
import { receiverPaths } from './references.ts';
import type { TaskOncall } from './responses.ts';

/**
 * GET /alarmtask/oncall: who the task will page over the coming `days` (default 14), for each of its
 * receivers that names a schedule: the schedule's final shifts from now, its gaps and coverage.
 */
export async function taskOncall(
  input: { uid: number; task_id: number; days?: number },
  deps = { now: nowSeconds },
): Promise<TaskOncall> {
  const task = await taskForUser(input.uid, input.task_id);
  const from = deps.now();
  const to = from + (input.days ?? 14) * DAY_SECONDS;
  const named = receiverPaths(task).flatMap(({ path, receiver }) =>
    (receiver.oncall ?? []).map((o) => ({ path, ...o })),
  );
  const ids = [...new Set(named.map((n) => n.schedule_id))];
  const [schedules, timelines] = await Promise.all([
    getSchedules(ids),
    Promise.all(ids.map(async (id) => [id, await loadTimeline(id, from)] as const)),
  ]);
  const names = new Map(schedules.map((s) => [s.id, s.name]));
  const data = new Map(timelines);
  const shiftsOf = new Map(
    ids.map((id) => {
      const d = data.get(id);
      return [id, d ? timeline(d.versions, d.overrides, from, to) : []] as const;
    }),
  );
  const nowUids = [...new Set([...shiftsOf.values()].flatMap((s) => s[0]?.uids ?? []))];
  const people = new Map((await getUsers(nowUids)).map((u) => [u.uid, summaryPerson(u)]));
  return {
    task_id: task.id,
    from,
    to,
    receivers: named.map((n) => {
      const shifts = shiftsOf.get(n.schedule_id) ?? [];
      return {
        path: n.path,
        schedule: { id: n.schedule_id, name: names.get(n.schedule_id) ?? '' },
        channels: n.channels,
        on_call_now: (shifts[0]?.uids ?? []).flatMap((u) => people.get(u) ?? []),
        shifts: shifts.map((s) => ({ start: s.start, end: s.end, uids: s.uids, source: s.source })),
        gaps: gapsOf(shifts),
        coverage_pct: coveragePct(shifts, from, to),
      };
    }),
  };
}
