import {
  type AlarmDeliveries,
  type DeliverySummary,
  type JobDeliveries,
  deliveriesOfAlarm,
  summarizeDeliveries,
} from '../deliveries/trace.ts';
import { getAlarmGroups, getUsers } from '../directory/repository.ts';
import { maskRobot, redact } from '../channels/redact.ts';
import { recipientsOf } from '../notifications/receivers.ts';
import { openReceiverRobots, openRobot } from '../channels/robots.ts';
import type { Task } from '../tasks/model.ts';
import { LEVEL_NAMES } from '../../contracts/levels.ts';
import { type Channels, USER_CHANNELS } from '../../contracts/receivers.ts';
import { retentionDaysOf } from '../tasks/settings.ts';
import { getWorkflowIdOfAlarm } from '../workflows/repository.ts';
import type { WorkflowDetail } from '../workflows/responses.ts';
import { showWorkflow } from '../workflows/service.ts';
import type { Why } from '../alarms/explain.ts';
import { type AlarmLogEntry, entryOfRecord, resultOf } from '../alarms/log.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { type ReceiverSelection, selectedReceivers } from '../alarms/notify.ts';
import type { AlarmTrace, TraceOncall, TraceReceivers, TraceStage } from '../alarms/responses.ts';
import { type OncallAnswer, sourceText } from '../schedules/model.ts';
import { getSchedules } from '../schedules/repository.ts';
import { formatDateTime } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { upgradeStrategies } from '../alarms/upgrade.ts';

import { type AlarmRef, locate, viewOf } from './alarm-history.ts';

/**
 * The decision trace of one alarm (GET /alarmtask/alarm/trace): the stages it went through, who it
 * went to and why, and what became of each delivery.
 */

/** Where to find the deliveries of one alarm (the deliveries module answers; injected for the trace). */
export interface TraceDeps {
  deliveriesOfAlarm: (
    taskId: number,
    uuid: string,
    processedAt: number,
    known: { record?: AlarmRecord; task?: Task },
  ) => Promise<AlarmDeliveries>;
  workflowOfAlarm: (taskId: number, uuid: string) => Promise<WorkflowDetail | undefined>;
}

const STRATEGY_TEXT: Record<string, (n: number) => string> = {
  cycle: () => 'the first alarm of each window is notified',
  delay: () => "the window's first alarm is notified when the window ends",
  'cycle-count': (n) => `the first alarm of a window, and the ${ordinal(n)} (which closes it), are notified`,
  'count-cycle': (n) => `the ${ordinal(n)} alarm of a window is notified (and closes it)`,
  count: (n) => `only the ${ordinal(n)} alarm of a window is notified`,
};

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${s}`;
}

/** The stages an alarm went through, in the decision trace's words (pure). */
export function stagesOf(
  task: Task,
  e: AlarmLogEntry,
  why: Why | undefined,
  record: AlarmRecord | undefined,
): TraceStage[] {
  const stages: TraceStage[] = [];
  const r = why?.recovery;
  if (r?.mode === 'monitor') {
    stages.push({ stage: 'recovery', result: 'matched', text: 'the monitor reported the alert as resolved' });
  } else if (r?.mode === 'condition') {
    stages.push({
      stage: 'recovery',
      result: r.match ? 'matched' : 'not matched',
      text: r.match
        ? `recovery condition ${r.match.index} matched: the alarm is a recovery`
        : `none of the ${r.conditions} recovery condition(s) matched`,
      match: r.match,
      misses: r.misses,
    });
  } else if (r?.mode === 'delay') {
    stages.push({
      stage: 'recovery',
      result: 'delay',
      text: `delay recovery: the metric recovers after ${r.minutes} minute(s) without an alarm`,
    });
  }
  if (e.decision === 'recovery') return stages;
  const f = why?.filter;
  if (f) {
    const hit = f.match
      ? `condition ${f.match.index} matched`
      : `none of the ${f.conditions} condition(s) matched`;
    stages.push({
      stage: 'filter',
      result: f.kept ? 'kept' : e.decision === 'rejected' ? 'rejected (stored)' : 'dropped',
      text: `${f.mode}: ${hit}, so the alarm was ${f.kept ? 'kept' : 'rejected'}${
        f.level_from !== f.level_to
          ? `; level ${LEVEL_NAMES[f.level_from]} -> ${LEVEL_NAMES[f.level_to]}`
          : ''
      }`,
      level_from: f.level_from,
      level_to: f.level_to,
      match: f.match,
      misses: f.misses,
    });
  } else stages.push({ stage: 'filter', result: 'off', text: 'the filter is off' });
  if (e.decision === 'drop' || e.decision === 'rejected') return stages;
  if (e.decision === 'not_save_db') {
    stages.push({
      stage: 'compress',
      result: 'off',
      text: 'the task stores no alarms, so nothing is compressed',
    });
  } else {
    const c = why?.compress;
    if (!c) stages.push({ stage: 'compress', result: 'off', text: 'compression is off' });
    else if (e.decision !== 'compressed') {
      stages.push({
        stage: 'compress',
        result: 'not matched',
        text: `no compression condition matched (${c.conditions ?? 0} tried): ${
          e.decision === 'compress_not_match' ? 'sent as uncompressed' : 'stored without notification'
        }`,
        misses: c.misses,
      });
    } else {
      const n = c.count;
      stages.push({
        stage: 'compress',
        result: e.notify === 'now' ? 'sent' : e.notify === 'deferred' ? 'deferred' : 'compressed',
        text: `${c.method} compression, ${c.strategy} strategy (${STRATEGY_TEXT[c.strategy]?.(n) ?? ''}; window ${
          c.cycle_minutes
        } min): ${ordinal(e.k ?? 1)} alarm of batch ${e.batch} -> ${
          e.notify === 'now'
            ? 'sent to the receivers'
            : e.notify === 'deferred'
              ? 'sent when the window ends'
              : 'compressed away'
        }`,
        metric: e.metric,
        batch: e.batch,
        k: e.k,
        n,
        window: record?.window,
        match: c.match,
      });
    }
  }
  const strategies = upgradeStrategies(task.upgrade);
  if (record?.upgrade_counts?.length || record?.upgrades?.length) {
    const fired = new Set((record.upgrades ?? []).map((u) => u.index));
    stages.push({
      stage: 'upgrade',
      result: fired.size > 0 ? 'fired' : 'not fired',
      strategies: (record.upgrade_counts ?? []).map((counted, index) => ({
        index,
        ...(strategies[index]
          ? { interval: strategies[index].interval, count: strategies[index].count }
          : {}),
        counted,
        fired: fired.has(index),
      })),
      text: `${fired.size} upgrade strateg${fired.size === 1 ? 'y' : 'ies'} fired`,
    });
  }
  return stages;
}

/**
 * Which receiver sets an alarm went to: its record's selection, or for a task that stores nothing
 * (no record), the dispatch its reasons recorded.
 */
export function selectionOf(record: AlarmRecord | undefined, why: Why | undefined): ReceiverSelection {
  const d = why?.dispatch;
  return (
    record?.selection ?? {
      override: why?.override === true,
      dispatch: (d?.matched ?? []).map((m) => m.index),
      defaults: !why?.override && (!d || d.mode === 'non-lazy' || d.matched.length === 0),
    }
  );
}

/** Why each receiver set was notified, in the decision trace's words (pure). */
export function receiverReasons(sets: { set?: string }[], why: Why | undefined): TraceReceivers['sets'] {
  return sets.map((s) => {
    if (s.set === 'override')
      return { set: 'override', text: "the report carried its own receiver, which replaces the task's" };
    if (s.set && /^d\d+$/.test(s.set)) {
      const i = Number(s.set.slice(1));
      return {
        set: s.set,
        text: `dispatch item ${i} matched`,
        match: why?.dispatch?.matched.find((m) => m.index === i),
      };
    }
    return {
      set: 'default',
      text: why?.dispatch?.matched.length
        ? 'non-lazy dispatch: the defaults are notified too'
        : 'no dispatch item matched: the default receivers',
    };
  });
}

/** Who the alarm went to and why. */
async function receiversOf(
  task: Task,
  e: AlarmLogEntry,
  why: Why | undefined,
  record: AlarmRecord | undefined,
): Promise<TraceReceivers | undefined> {
  if (!record && e.decision !== 'not_save_db') return undefined;
  const selection = selectionOf(record, why);
  if (selection.override && !record?.receiver)
    return {
      text: "the report carried its own receiver, which replaces the task's (not stored: the task stores no alarms)",
      sets: [],
    };
  const sets = selectedReceivers(task.receiver, selection, record?.receiver);
  const groups = await getAlarmGroups([...new Set(sets.flatMap((s) => s.alarmgroup ?? []))]);
  const recipients = recipientsOf(sets, groups);
  const reasons = receiverReasons(sets, why);
  return {
    text: reasons.map((r) => r.text).join('; '),
    sets: reasons,
    misses: why?.dispatch?.misses,
    alarm_groups: groups.map((g) => ({ id: g.id, name: g.name })),
    // The webhook URL may carry a token in its query: its origin and path only.
    people: redact(recipients.channels) as Channels,
    robots: recipients.robotSets.map((s) => ({
      set: s.key,
      channel: s.channel,
      // Robots travel sealed: each is opened here only to be shown masked.
      robots: s.robots.map((r) => maskRobot(openRobot(r).webhook)),
    })),
    ...(record?.receiver?.channels
      ? { override: redact(openReceiverRobots(record.receiver).channels) as Channels }
      : {}),
  };
}

/**
 * The schedules' answers the alarm's notifications recorded (each message's, by scene), in words:
 * who was on call and why, or that nobody was (`skipped: nobody on call`).
 */
async function oncallOf(deliveries: AlarmDeliveries): Promise<TraceOncall[]> {
  const seen = new Map<string, OncallAnswer & { scene: string }>();
  for (const job of deliveries.notifications) {
    for (const a of job.oncall ?? []) {
      const key = `${job.scene}:${a.schedule_id}`;
      const known = seen.get(key);
      const channels = [...new Set([...(known?.channels ?? []), ...a.channels])];
      seen.set(key, { ...(known ?? a), channels, scene: job.scene });
    }
  }
  if (seen.size === 0) return [];
  const names = new Map(
    (await getSchedules([...new Set([...seen.values()].map((a) => a.schedule_id))])).map((s) => [
      s.id,
      s.name,
    ]),
  );
  const when = (t: number) => formatDateTime(t, config().timeZone);
  return [...seen.values()].map((a) => {
    const name = names.get(a.schedule_id);
    const what = `schedule [${a.schedule_id}]${name ? ` ${name}` : ' (deleted since)'}`;
    const text = a.uids.length
      ? `${what}: uid ${a.uids.join(', ')} on call by ${sourceText(a.source)}, shift ${when(a.shift.start)} to ${when(a.shift.end)} (${a.channels.join(', ')})`
      : `${what}: skipped: nobody on call at ${when(a.at)}`;
    return { ...a, ...(name ? { name } : {}), text };
  });
}

/**
 * The trace's headline. An alarm the pipeline sent to its receivers is named by what reached a person
 * (`notified`, `not notified yet`, `nobody reached`: the deliveries decide, not the decision), then
 * what each channel came to; any other alarm by its decision, and its deliveries if it had some (an
 * upgrade's, for instance).
 */
export function summaryOf(e: AlarmLogEntry, delivery: DeliverySummary): string {
  const result = resultOf(e);
  const sent =
    result === 'notified' ||
    result === 'recovered' ||
    (result === 'deferred' && delivery.channels.length > 0);
  if (sent) return `${sentAs(e)}${delivery.reach}: ${delivery.text}`;
  const decision = decisionOf(e);
  return delivery.channels.length > 0 ? `${decision}; ${delivery.text}` : decision;
}

/** What an alarm that was sent was sent as (nothing for a plain alarm). */
function sentAs(e: AlarmLogEntry): string {
  if (e.decision === 'recovery') return 'a recovery (open workflows of its metric finished), ';
  if (e.decision !== 'compressed') return '';
  const which = `the ${ordinal(e.k ?? 1)} alarm of batch ${e.batch}`;
  return e.notify === 'deferred' ? `${which} (sent when its window ended), ` : `${which}, `;
}

/** An alarm not sent (yet) in words. */
function decisionOf(e: AlarmLogEntry): string {
  switch (resultOf(e)) {
    case 'filtered':
      return e.decision === 'rejected'
        ? 'rejected by the filter (stored, nobody notified)'
        : 'dropped by the filter (not stored, nobody notified)';
    case 'stored':
      return 'stored only: no compression condition matched and the task notifies only compressed alarms';
    case 'compressed':
      return `compressed: the ${ordinal(e.k ?? 1)} alarm of batch ${e.batch}, not notified by the strategy`;
    default:
      return `the first alarm of batch ${e.batch}: sent to its receivers once its window ends`;
  }
}

/** The uids a trace shows: its receivers' people and its notifications' targets (`uid 1 …`, `uids 1,2`). */
export function uidsShown(receivers: TraceReceivers | undefined, notifications: JobDeliveries[]): number[] {
  const uids = new Set<number>();
  for (const channels of [receivers?.people, receivers?.override])
    for (const ch of USER_CHANNELS) for (const uid of channels?.[ch] ?? []) uids.add(uid);
  for (const n of notifications)
    for (const target of n.targets) {
      const m = /^uids? ([\d,]+)/.exec(target);
      for (const uid of m?.[1].split(',') ?? []) if (uid) uids.add(Number(uid));
    }
  return [...uids].sort((a, b) => a - b);
}

const defaultTraceDeps: TraceDeps = {
  deliveriesOfAlarm: (taskId, uuid, processedAt, known) =>
    deliveriesOfAlarm(taskId, uuid, processedAt, known),
  workflowOfAlarm: async (taskId, uuid) => {
    const id = await getWorkflowIdOfAlarm(taskId, uuid);
    return id === undefined ? undefined : (await showWorkflow(id)).workflow;
  },
};

/** GET /alarmtask/alarm/trace: why was (or wasn't) anyone notified of this alarm. */
export async function traceAlarm(ref: AlarmRef, deps: TraceDeps = defaultTraceDeps): Promise<AlarmTrace> {
  const { task, record, entry } = await locate(ref);
  const e = record ? entryOfRecord(record) : (entry as AlarmLogEntry);
  const why = record?.why ?? entry?.why;
  const versionThen = why?.task_version;
  const processedAt = record?.processed_at ?? e.created_at;
  const [deliveries, workflow, receivers] = await Promise.all([
    deps.deliveriesOfAlarm(task.id, e.uuid, processedAt, { record, task }),
    record?.workflow || e.decision === 'compressed' ? deps.workflowOfAlarm(task.id, e.uuid) : undefined,
    receiversOf(task, e, why, record),
  ]);
  const delivery = summarizeDeliveries(deliveries);
  const oncall = await oncallOf(deliveries);
  if (receivers && oncall.length) receivers.oncall = oncall;
  const users = await getUsers(uidsShown(receivers, deliveries.notifications));
  return {
    alarm: {
      ...viewOf(e, record ? { ctn: record.history.ctn, notice_time: record.history.notice_time } : undefined),
      task: { id: task.id, name: task.name },
      ...(record ? { reported_at: record.reported_at, processed_at: record.processed_at } : {}),
      expires_at: e.expires_at || processedAt + retentionDaysOf(task) * 86_400,
    },
    summary: summaryOf(e, delivery),
    delivery,
    configuration: {
      version_then: versionThen ?? null,
      version_now: task.version,
      changed: versionThen !== undefined && versionThen !== task.version,
      note:
        versionThen === undefined
          ? 'processed before decision traces were recorded: the stages show the recorded decisions only'
          : versionThen !== task.version
            ? 'the task has changed since this alarm was processed: conditions are shown as they were then; receivers as configured now'
            : 'the configuration is unchanged since this alarm was processed',
    },
    stages: stagesOf(task, e, why, record),
    ...(receivers ? { receivers } : {}),
    notifications: deliveries.notifications,
    webhooks: deliveries.webhooks,
    workflow: workflow ?? null,
    users: users.map((u) => ({ uid: u.uid, username: u.username })).sort((a, b) => a.uid - b.uid),
  };
}
