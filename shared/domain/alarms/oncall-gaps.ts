import { formatDateTime } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { logger } from '../../log.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { enqueue } from '../../messaging/sqs.ts';
import type { DueItem } from '../due/repository.ts';
import type { DueResult } from '../due/runner.ts';
import { loadTimeline } from '../schedules/answers.ts';
import { DAY_SECONDS } from '../schedules/model.ts';
import { getRaisedGaps, getSchedule, putRaisedGaps, type RaisedGap } from '../schedules/repository.ts';
import { coverageGaps, type CoverageGap } from '../schedules/timeline.ts';
import { effectiveStatus, TASK_RUNNING, type Task } from '../tasks/model.ts';
import { getTask } from '../tasks/repository.ts';
import { namedUuid } from './ids.ts';

/**
 * Coverage gaps as alarms (API guide §18.6), the way heartbeats raise theirs: the due check
 * (`schedule-coverage`, run when a schedule changes and every hour while it has coverage rules)
 * computes the gaps inside the required windows over [now, now + horizon] (gaps in the past are
 * never reported), raises one alarm per new gap to `coverage.alarm_task_id` through the normal
 * pipeline, and sends the recovery of a raised gap once nothing of it is left (an override or an
 * edit filled it, or it has passed). The raised gaps are kept beside the schedule (`GAPS`), written
 * under a version; alarms carry uuids named by the gap and that version, so a check run twice sends
 * each once, and a gap raised again after a recovery is a new alarm.
 */
export interface CoverageDeps {
  publishAlarm: (message: AlarmMessage) => Promise<void>;
  getTask: (id: number) => Promise<Task | undefined>;
}

const defaultDeps: CoverageDeps = {
  publishAlarm: (message) => enqueue('alarm', { body: message }),
  getTask: (id) => getTask(id, true),
};

/** The level of a gap's alarm (error). */
const GAP_LEVEL = 2;

function alarmOf(g: RaisedGap, now: number, recovery: boolean): AlarmMessage {
  return {
    kind: 'alarm',
    uuid: recovery ? namedUuid(g.alarm_task_id, `${g.uuid}:recovered`) : g.uuid,
    task_id: g.alarm_task_id,
    level: GAP_LEVEL,
    ctn: g.ctn,
    notice_time: now,
    reported_at: now,
    dedup: true,
    ...(recovery ? { recovery: true as const } : {}),
  };
}

const overlaps = (a: { start: number; end: number }, b: { start: number; end: number }) =>
  a.start < b.end && b.start < a.end;

/** The due check of one schedule's coverage. A failure is tried again a minute later. */
export async function checkCoverage(
  item: DueItem,
  now: number,
  deps: CoverageDeps = defaultDeps,
): Promise<DueResult> {
  try {
    return await check(item, now, deps);
  } catch (err) {
    logger.error('coverage check failed; retrying in a minute', { ref: item.ref, error: err as Error });
    return { reschedule: now + 60, payload: item.payload };
  }
}

async function check(item: DueItem, now: number, deps: CoverageDeps): Promise<DueResult> {
  const { schedule_id: id, hourly } = item.payload as { schedule_id: number; hourly?: boolean };
  const [schedule, raised] = await Promise.all([getSchedule(id, true), getRaisedGaps(id)]);
  let current: CoverageGap[] = [];
  let covered = false;
  if (schedule) {
    const data = await loadTimeline(id, now);
    const horizon = Math.max(0, ...data.versions.map((v) => v.coverage?.horizon_days ?? 0));
    covered = horizon > 0;
    current = coverageGaps(data.versions, data.overrides, now, now + horizon * DAY_SECONDS);
  }
  const keep: RaisedGap[] = [];
  const messages: AlarmMessage[] = [];
  for (const r of raised.gaps) {
    const left = current.some(
      (g) =>
        g.alarm_task_id === r.alarm_task_id && overlaps(g, { start: Math.max(r.start, now), end: r.end }),
    );
    if (left) keep.push(r);
    else messages.push(alarmOf(r, now, true));
  }
  const when = (t: number) => formatDateTime(t, config().timeZone);
  for (const g of current) {
    if (keep.some((r) => r.alarm_task_id === g.alarm_task_id && overlaps(r, g))) continue;
    const task = await deps.getTask(g.alarm_task_id);
    // A task that is gone or not running raises nothing; the next check tries again.
    if (!task || effectiveStatus(task, now) !== TASK_RUNNING) continue;
    const r: RaisedGap = {
      start: g.start,
      end: g.end,
      alarm_task_id: g.alarm_task_id,
      uuid: namedUuid(g.alarm_task_id, `oncall-gap:${id}:${g.start}:${g.end}:${raised.version}`),
      ctn: {
        oncall_gap: 'nobody on call',
        schedule: schedule?.name ?? '',
        schedule_id: id,
        gap_start: g.start,
        gap_end: g.end,
        message: `nobody is on call from ${when(g.start)} to ${when(g.end)}`,
      },
    };
    keep.push(r);
    messages.push(alarmOf(r, now, false));
  }
  for (const m of messages) await deps.publishAlarm(m);
  // A deleted schedule's gaps item goes a week after its last recovery.
  const expireAt = schedule ? undefined : now + 7 * DAY_SECONDS;
  if (messages.length > 0 && !(await putRaisedGaps(id, keep, raised.version, expireAt))) {
    // Another check wrote first: look again (uuids are named, so nothing is sent twice).
    return { reschedule: now + 60, payload: item.payload };
  }
  if (!hourly || !schedule || !covered) return undefined;
  return { reschedule: Math.floor(now / 3600) * 3600 + 3600 };
}
