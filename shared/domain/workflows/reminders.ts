import { keys } from '../../db/keys.ts';
import { logger } from '../../log.ts';
import type { DueItem } from '../due/repository.ts';
import type { DueResult } from '../due/runner.ts';
import type { Task } from '../tasks/model.ts';
import {
  nextSeq,
  PIPE_REMIND,
  type PipelineRecord,
  remindDecision,
  remindScene,
  type Workflow,
} from './model.ts';
import { defaultDeps, type WorkflowDeps } from './workflow-deps.ts';
import { channelsOf, noticeOf, type RemindPayload } from './announce.ts';
import { eventIdOf, workflowEventData } from './views.ts';

/**
 * The due handler of workflow reminders (API guide §10.5, §9.8). A reminder fires only while its workflow
 * is still in the status and epoch it was scheduled in (any status change bumps the epoch, which is
 * how claim, processed, close and reactive cancel reminders). While the task is stopped or paused
 * the reminder is held and fires once the task runs again. Firing writes a status-3 pipeline record
 * (once per reminder and due time, so a re-run cannot record it twice), publishes the
 * remind_pending / remind_processing event and notifications, and re-arms a `cycle` reminder.
 */
export async function fireReminder(
  item: DueItem,
  now: number,
  deps: WorkflowDeps = defaultDeps,
): Promise<DueResult> {
  const { workflow_id: id, index, epoch } = item.payload as unknown as RemindPayload;
  // An operation that keeps the status (assign) moves only the workflow's event sequence: read again.
  for (let attempt = 0; ; attempt++) {
    const workflow = await deps.repo.getWorkflow(id, true);
    const task = workflow ? await deps.getTask(workflow.task_id) : undefined;
    const decision = remindDecision({ workflow, task, index, epoch, now });
    if (decision.action === 'drop') {
      logger.debug('workflow reminder dropped', { workflow_id: id, index, reason: decision.reason });
      return undefined;
    }
    if (decision.action === 'hold') return rearm(item, decision.until, deps);
    if (!workflow || !task) return undefined;

    const { reminder } = decision;
    let record: PipelineRecord = {
      workflow_id: id,
      sk: keys.workflowRemindPipeline(id, item.due_at, index).sk,
      status: PIPE_REMIND,
      remark: '',
      props: { remind: { interval: reminder.interval, status: workflow.status } },
      created_by: 0,
      created_at: now,
      workflow_status: workflow.status,
      workflow_epoch: epoch,
      seq: nextSeq(workflow),
    };
    const outcome = await deps.repo.insertReminderRecord(
      { status: workflow.status, epoch, seq: workflow.seq },
      record,
    );
    if (outcome === 'moved-on') {
      if (attempt < 3) continue;
      throw new Error(`workflow ${id} kept changing while its reminder fired`);
    }
    // `already-recorded`: an earlier run recorded it but may have failed to publish; publish again
    // what it recorded (the event and job ids are the same, so receivers de-duplicate).
    if (outcome === 'already-recorded')
      record = (await deps.repo.getPipelineRecords([{ workflow_id: id, sk: record.sk }]))[0] ?? record;
    return announceReminder(item, now, { workflow, task, reminder, record }, deps);
  }
}

/** Publishes a recorded reminder's event and notifications, and re-arms a `cycle` reminder. */
async function announceReminder(
  item: DueItem,
  now: number,
  fired: {
    workflow: Workflow;
    task: Task;
    reminder: Extract<ReturnType<typeof remindDecision>, { action: 'fire' }>['reminder'];
    record: PipelineRecord;
  },
  deps: WorkflowDeps,
): Promise<DueResult> {
  const { workflow, task, reminder, record } = fired;
  const scene = remindScene(workflow.status);
  const receivers =
    reminder.reuse_receiver === 1 || !reminder.receiver ? [task.receiver ?? {}] : [reminder.receiver];
  const data = workflowEventData({
    scene,
    task,
    workflow,
    status: workflow.status,
    pipeline: record,
    users: new Map(),
  });
  const notice = await noticeOf({
    scene,
    task,
    data,
    eventId: eventIdOf(record),
    channels: await channelsOf(receivers, deps),
    // A pending workflow's reminder carries claim links (API guide §11.7).
    ...(scene === 'remind_pending'
      ? { claim: { workflow_id: workflow.id, round: workflow.round ?? 0 } }
      : {}),
  });
  await deps.publishWebhookEvents(task.id, [notice.event]);
  if (notice.jobs.length) await deps.publishJobs(notice.jobs);
  return reminder.mode === 'cycle' ? rearm(item, now + reminder.interval * 60, deps) : undefined;
}

/**
 * Puts the reminder back at `at`. It writes a fresh due item (kind, ref, time, payload only) instead
 * of returning `{reschedule}`: the runner re-puts the item as it was read, raw keys included, so the
 * re-armed item would keep its old key and never be claimed again.
 */
async function rearm(item: DueItem, at: number, deps: WorkflowDeps): Promise<DueResult> {
  await deps.putDue({ kind: item.kind, ref: item.ref, due_at: at, payload: item.payload });
  return undefined;
}
