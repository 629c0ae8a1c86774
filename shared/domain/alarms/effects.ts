import type { Task } from '../tasks/model.ts';
import { event, historyRef, orderRef, taskRef } from '../events/payloads.ts';
import type { AlarmRecord } from './model.ts';
import { type Notice, selectedReceivers, sendNotice } from './notify.ts';
import type { PipelineDeps } from './pipeline-deps.ts';

/**
 * The side effects of a recorded alarm: its notices (notification jobs and webhook events with ids
 * derived from the alarm, so a replay sends nothing twice) and its workflow.
 */

/**
 * `data.order` of a compressed alarm's events: the alarm's place in its metric (record.seq), then the
 * event's place among the alarm's own (its upgrades, by strategy, then the alarm, then its recovery),
 * so sequence numbers follow the metric's alarms whenever the event is raised. None for a record
 * stored before alarms were counted, or outside a metric.
 */
const UPGRADE_SLOTS = 50;
const ALARM_SLOT = 50;
const RECOVERY_SLOT = 90;
function metricOrder(record: AlarmRecord, slot: number): { order?: ReturnType<typeof orderRef> } {
  const { metric } = record.history;
  if (record.seq === undefined || !metric) return {};
  return { order: orderRef(`m:${metric}`, record.seq * 100 + slot) };
}

/** A workflow an alarm opened: its notices carry claim links for it (round 0: just created). */
export const claimOf = (workflow: { id: number } | undefined): Notice['claim'] =>
  workflow ? { workflow_id: workflow.id, round: 0 } : undefined;

export function alarmNotice(
  task: Task,
  record: AlarmRecord,
  type: string,
  workflow?: { id: number },
): Notice {
  const history = historyRef(record.history);
  const scene = type === 'compressed' ? 'compressed' : 'not_compress';
  return {
    ...(workflow ? { claim: claimOf(workflow) } : {}),
    task,
    receivers: selectedReceivers(task.receiver, record.selection, record.receiver),
    scene,
    jobId: `${record.task_id}:${record.uuid}:${scene}`,
    history,
    context: { type },
    event: {
      body: event('ALARM', type, { task: taskRef(task), history, ...metricOrder(record, ALARM_SLOT) }),
      eventId: `${record.task_id}:${record.uuid}:ALARM`,
    },
  };
}

export function recoveryNotice(task: Task, record: AlarmRecord): Notice {
  const history = historyRef(record.history);
  return {
    task,
    receivers: selectedReceivers(task.receiver, record.selection, record.receiver),
    scene: 'recovery',
    jobId: `${record.task_id}:${record.uuid}:recovery`,
    history,
    context: { type: 'recovery' },
    event: {
      body: event('RECOVERY', 'recovery', {
        task: taskRef(task),
        history,
        ...metricOrder(record, RECOVERY_SLOT),
      }),
      eventId: `${record.task_id}:${record.uuid}:RECOVERY`,
    },
  };
}

function upgradeNotice(
  task: Task,
  record: AlarmRecord,
  fire: AlarmRecord['upgrades'][number],
  workflow?: { id: number },
): Notice | undefined {
  const s = task.upgrade?.strategies?.[fire.index];
  // The configuration changed since the decision: that strategy no longer exists.
  if (!s || `${fire.index}.${s.interval}.${s.count}` !== fire.key) return undefined;
  const history = historyRef(record.history);
  const receivers =
    s.reuse_receiver === 1
      ? selectedReceivers(task.receiver, record.selection, record.receiver)
      : s.receiver
        ? [s.receiver]
        : [];
  // The rule without its receiver: templates may print `{context.rule}` and robots carry secrets.
  const rule = { interval: s.interval, count: s.count, level: s.level, reuse_receiver: s.reuse_receiver };
  return {
    ...(workflow ? { claim: claimOf(workflow) } : {}),
    task,
    receivers,
    scene: 'upgrade',
    jobId: `${record.task_id}:${record.uuid}:upgrade:${fire.key}`,
    history,
    context: { rule, zcount: fire.zcount },
    event: {
      body: event('UPGRADE', 'upgrade', {
        task: taskRef(task),
        history,
        ...metricOrder(record, Math.min(fire.index, UPGRADE_SLOTS - 1)),
      }),
      eventId: `${record.task_id}:${record.uuid}:UPGRADE:${fire.key}`,
    },
  };
}

/**
 * Deps for re-running the effects of an alarm recorded before (a redelivered message): its events and
 * notification jobs are marked as replays, so their consumers first check whether each was delivered
 * (since the record was written) and send only what was not.
 */
/** Effects published again for an alarm first processed at `processedAt` (Unix seconds). */
export function replaying(deps: PipelineDeps, processedAt: number): PipelineDeps {
  const since = processedAt * 1000 - 1000;
  return {
    ...deps,
    publishEvents: (taskId, events) =>
      deps.publishEvents(
        taskId,
        events.map((e) => ({ ...e, replaySinceMs: since })),
      ),
    publishJobs: (jobs) =>
      deps.publishJobs(jobs.map((j) => ({ ...j, replay: true, replay_since_ms: since }))),
  };
}

/**
 * The side effects of a recorded alarm: its workflow, then its notices (upgrade, then the alarm's),
 * which carry claim links for the workflow it opened. Idempotent.
 */
export async function runEffects(task: Task, record: AlarmRecord, deps: PipelineDeps): Promise<void> {
  if (record.outcome === 'recovery') {
    await sendNotice(recoveryNotice(task, record), deps);
    if (record.recovery_metric) await deps.finishWorkflowsOfMetric({ task, metric: record.recovery_metric });
    return;
  }
  const notifyNow = record.notify === 'now';
  const workflow =
    notifyNow && record.workflow ? await deps.createWorkflow({ task, history: record.history }) : undefined;
  for (const fire of record.upgrades ?? []) {
    const notice = upgradeNotice(task, record, fire, workflow);
    if (notice) await sendNotice(notice, deps);
  }
  if (notifyNow) await sendNotice(alarmNotice(task, record, record.outcome, workflow), deps);
}
