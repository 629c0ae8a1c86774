import { logger } from '../../log.ts';
import type { ClaimTarget, NotificationJob } from '../../contracts/messages.ts';
import type { DueItem } from '../due/repository.ts';
import { MalformedDueWork } from '../due/runner.ts';
import { withOncall } from '../notifications/oncall.ts';
import { alarmGroupIds, channelJobs, type Recipients, recipientsOf } from '../notifications/receivers.ts';
import type { Task } from '../tasks/model.ts';
import type { ReceiverConfig } from '../../contracts/receivers.ts';
import { type CountMove, countDeltas, type PipelineRecord, remindersFor, type Workflow } from './model.ts';
import { defaultDeps, type WorkflowDeps } from './workflow-deps.ts';
import { eventIdOf, renderContext, type WorkflowScene, workflowEvent, workflowEventData } from './views.ts';

/**
 * Announcing what happened to workflows (API guide §10): each operation writes an announcement (an
 * outbox item of the due work) in its transaction; settling it applies its count moves once and
 * publishes its WORKFLOW events, notifications and reminders (at least once), right after the commit
 * or from the next scheduled run.
 */
/** Due-work kinds of this module (its handler: due-work.ts). */
export const ANNOUNCE_KIND = 'workflow-announce';
export const REMIND_KIND = 'workflow-remind';

/** `recovered`: a workflow finished by a recovery (announced as `processed`, no channel notifications). */
export type AnnounceScene = WorkflowScene | 'recovered';

export interface AnnouncePayload {
  scene: AnnounceScene;
  records: { workflow_id: number; sk: string }[];
  /** The workflows' moves between the task counts (applied once: runAnnouncement). */
  counts?: CountMove[];
  /** Set (in the table and in hand) once the counts are applied. */
  counted?: boolean;
}

export interface RemindPayload {
  workflow_id: number;
  /** Index of the reminder in the task's `workflow.reminds`. */
  index: number;
  /** The workflow epoch the reminder was scheduled in. */
  epoch: number;
}

export function announcement(
  scene: AnnounceScene,
  records: PipelineRecord[],
  ref: string,
  now: number,
  counts: CountMove[],
): DueItem {
  const payload: AnnouncePayload = {
    scene,
    records: records.map((r) => ({ workflow_id: r.workflow_id, sk: r.sk })),
    ...(counts.length ? { counts } : {}),
  };
  return { kind: ANNOUNCE_KIND, ref, due_at: now, payload: payload as unknown as Record<string, unknown> };
}

/**
 * The count moves of status changes: only counted workflows move (one stored before the counts
 * existed enters them, with its status at that moment, when the backfill reaches it).
 */
export function countMoves(changes: { before: Workflow; after: Workflow }[]): CountMove[] {
  return changes.flatMap(({ before, after }) =>
    before.counted && before.status !== after.status
      ? [{ task_id: after.task_id, workflow_id: after.id, from: before.status, to: after.status }]
      : [],
  );
}

/** Transactions that lost to a concurrent one on a counter item, before the counts wait for the next run. */
const COUNT_ATTEMPTS = 6;

/** Applies an announcement's count moves once (AP-F12), retrying a lost race with jittered backoff. */
async function applyCounts(outbox: DueItem, moves: CountMove[], deps: WorkflowDeps): Promise<void> {
  const deltas = countDeltas(moves, deps.counts.countShardOf);
  if (deltas.length === 0) return;
  for (let attempt = 1; ; attempt++) {
    if ((await deps.counts.applyWorkflowCounts(outbox, deltas)) !== 'conflict') return;
    if (attempt >= COUNT_ATTEMPTS)
      throw new Error(`workflow counts of ${outbox.ref}: busy, left for the next run`);
    await new Promise((r) => setTimeout(r, Math.random() * 20 * 2 ** attempt));
  }
}

/**
 * Settles an announcement (outbox item): its count moves first (exactly once, whoever runs it), then
 * its events, notifications and reminders (at least once). Run right after the commit and, when that
 * failed, by the scheduled run (due kind `workflow-announce`), which then deletes the item.
 */
export async function runAnnouncement(outbox: DueItem, deps: WorkflowDeps = defaultDeps): Promise<void> {
  const payload = announcePayloadOf(outbox.payload);
  if (payload.counts?.length && !payload.counted) {
    await applyCounts(outbox, payload.counts, deps);
    // The runner buries the item it holds when publishing keeps failing: it must say so too.
    payload.counted = true;
  }
  await announce(payload, deps);
}

/** An outbox item's payload, checked: one that names no pipeline records can never be announced. */
function announcePayloadOf(payload: Record<string, unknown>): AnnouncePayload {
  const records = payload.records;
  const isKey = (r: unknown) =>
    typeof (r as { workflow_id?: unknown })?.workflow_id === 'number' &&
    typeof (r as { sk?: unknown }).sk === 'string';
  if (!Array.isArray(records) || !records.every(isKey))
    throw new MalformedDueWork('announcement: records must be a list of {workflow_id, sk}');
  return payload as unknown as AnnouncePayload;
}

/**
 * Publishes an announcement right after its transaction committed, then removes it from the due
 * work. If publishing fails the item stays, and the next scheduled run publishes it (the operation
 * itself has succeeded; event and job ids are deterministic, so a repeat is de-duplicated).
 */
export async function announceNow(outbox: DueItem, deps: WorkflowDeps): Promise<void> {
  try {
    await runAnnouncement(outbox, deps);
    await deps.deleteDue(outbox);
  } catch (err) {
    logger.warn('workflow announcement deferred to the scheduled run', {
      ref: outbox.ref,
      error: err as Error,
    });
  }
}

/**
 * Who receivers name, with their alarm groups (dispatch does not apply; robots per set, API guide
 * §9.7), and whoever the schedules they name have on call now.
 */
export async function channelsOf(
  receivers: ReceiverConfig[],
  deps: WorkflowDeps = defaultDeps,
): Promise<Recipients> {
  const plain = receivers.map((r) => ({ alarmgroup: r.alarmgroup, channels: r.channels, oncall: r.oncall }));
  const { sets, oncall } = await withOncall(plain, deps.now());
  const ids = alarmGroupIds(sets);
  const groups = ids.length ? await deps.getAlarmGroups(ids) : [];
  return { ...recipientsOf(sets, groups), oncall };
}

/**
 * The webhook event of one workflow notice and, unless `silent`, its channel notifications; `claim`:
 * the workflow is pending, and the notifications carry claim links (API guide §11.7).
 */
export async function noticeOf(input: {
  scene: WorkflowScene;
  task: Task;
  data: Record<string, unknown>;
  eventId: string;
  channels?: Recipients;
  claim?: ClaimTarget;
}): Promise<{ event: { body: ReturnType<typeof workflowEvent>; eventId: string }; jobs: NotificationJob[] }> {
  const { scene, task, data, eventId, channels, claim } = input;
  const jobs = channels
    ? channelJobs(channels, {
        job_id: eventId,
        task_id: task.id,
        scene,
        context: renderContext(task, data),
        ...(claim ? { claim } : {}),
      })
    : [];
  return { event: { body: workflowEvent(scene, data), eventId }, jobs };
}

/**
 * Publishes what a set of pipeline records announce: one WORKFLOW event each (to the task webhook),
 * notification jobs to the task's receivers, and the reminders of the status the workflow entered
 * (generated and reactive: the pending reminders; claim: the processing ones). Re-runnable: ids are
 * deterministic and reminder due items are keyed by (workflow, reminder, epoch, time).
 */
export async function announce(payload: AnnouncePayload, deps: WorkflowDeps = defaultDeps): Promise<void> {
  const records = await deps.repo.getPipelineRecords(payload.records);
  if (records.length === 0) return;
  const workflows = await deps.repo.getWorkflows(records.map((r) => r.workflow_id));
  const taskIds = [...new Set([...workflows.values()].map((w) => w.task_id))];
  const [users, tasks] = await Promise.all([
    deps.getUsers(records.map((r) => r.created_by).filter((u) => u > 0)),
    Promise.all(taskIds.map((id) => deps.getTask(id))),
  ]);
  const userMap = new Map(users.map((u) => [u.uid, u]));
  const taskMap = new Map(tasks.filter((t) => t !== undefined).map((t) => [t.id, t]));
  const silent = payload.scene === 'recovered';
  const scene: WorkflowScene = payload.scene === 'recovered' ? 'processed' : payload.scene;
  const channelsByTask = new Map<number, Recipients>();
  if (!silent) {
    for (const t of taskMap.values()) channelsByTask.set(t.id, await channelsOf([t.receiver ?? {}], deps));
  }

  const eventsByTask = new Map<number, { body: ReturnType<typeof workflowEvent>; eventId: string }[]>();
  const jobs: NotificationJob[] = [];
  const reminders: DueItem[] = [];
  for (const record of records) {
    const wf = workflows.get(record.workflow_id);
    const task = wf ? taskMap.get(wf.task_id) : undefined;
    // A deleted task has no receivers and no webhook any more.
    if (!wf || !task) continue;
    const data = workflowEventData({
      scene,
      task,
      workflow: wf,
      status: record.workflow_status,
      pipeline: record,
      users: userMap,
    });
    const notice = await noticeOf({
      scene,
      task,
      data,
      eventId: eventIdOf(record),
      channels: channelsByTask.get(task.id),
      // A workflow made pending (created: round 0; reactivated: the round it entered).
      ...(scene === 'generated' || scene === 'reactive'
        ? { claim: { workflow_id: wf.id, round: scene === 'generated' ? 0 : (wf.round ?? 0) } }
        : {}),
    });
    eventsByTask.set(task.id, [...(eventsByTask.get(task.id) ?? []), notice.event]);
    jobs.push(...notice.jobs);
    if (scene === 'generated' || scene === 'claim' || scene === 'reactive') {
      reminders.push(...reminderItems(task, record));
    }
  }
  for (const [taskId, events] of eventsByTask) await deps.publishWebhookEvents(taskId, events);
  if (jobs.length) await deps.publishJobs(jobs);
  for (const r of reminders) await deps.putDue(r);
}

/** The due items of the reminders a workflow gets when it enters the status of `record`. */
export function reminderItems(task: Task, record: PipelineRecord): DueItem[] {
  const reminds = task.workflow?.enable ? task.workflow.reminds : [];
  return remindersFor(reminds, record.workflow_status).map(({ index, reminder }) => {
    const payload: RemindPayload = { workflow_id: record.workflow_id, index, epoch: record.workflow_epoch };
    return {
      kind: REMIND_KIND,
      ref: `${record.workflow_id}:${index}:${record.workflow_epoch}`,
      due_at: record.created_at + reminder.interval * 60,
      payload: payload as unknown as Record<string, unknown>,
    };
  });
}
