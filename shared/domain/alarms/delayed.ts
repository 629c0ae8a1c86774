import { logger } from '../../log.ts';
import type { DueItem } from '../due/repository.ts';
import type { DueResult } from '../due/runner.ts';
import { effectiveStatus, TASK_PAUSED, TASK_RUNNING, type Task } from '../tasks/model.ts';
import { sendNotice } from './notify.ts';
import { recoveryDelaySeconds } from './recovery.ts';
import { alarmNotice, recoveryNotice } from './effects.ts';
import { defaultDeps, type PipelineDeps } from './pipeline-deps.ts';

/**
 * The pipeline's delayed work, run by the scheduled function (due-work.ts): the delay strategy's
 * window flushes and delay-mode recovery checks.
 */

/** Due-work kinds of this module (its handler: due-work.ts). */
export const FLUSH_KIND = 'compress-flush';
export const RECOVERY_DELAY_KIND = 'recovery-delay';

/** The `compress-flush` item of a delayed window: its first alarm, notified at the window's end. */
export function flushItem(
  taskId: number,
  metric: string,
  batch: number,
  uuid: string,
  dueAt: number,
): DueItem {
  return {
    kind: FLUSH_KIND,
    ref: `${taskId}:${metric}:${batch}`,
    due_at: dueAt,
    payload: { task_id: taskId, uuid },
  };
}

/** Holds work of a paused task until it runs again; undefined when the task runs. */
function heldFor(task: Task, now: number): DueResult | 'drop' | undefined {
  const status = effectiveStatus(task, now);
  if (status === TASK_RUNNING) return undefined;
  if (status === TASK_PAUSED) return { reschedule: Math.max(task.paused_until ?? 0, now + 60) };
  return 'drop';
}

/**
 * `compress-flush`: the delay strategy's window ended; its first alarm is notified once (events and
 * jobs carry the same ids as an inline notification would). Held while the task is paused, dropped
 * when it is stopped or deleted.
 */
export async function flushCompressWindow(item: DueItem, now: number, deps: PipelineDeps = defaultDeps) {
  const { task_id, uuid } = item.payload as { task_id: number; uuid: string };
  const task = await deps.getTask(task_id);
  if (!task) return undefined;
  const held = heldFor(task, now);
  if (held === 'drop') return undefined;
  if (held) return held;
  const record = await deps.repo.getAlarmRecord(task.id, uuid);
  if (!record) {
    logger.error('compress flush: alarm record not found', { uuid });
    return undefined;
  }
  const workflow = task.workflow?.enable
    ? await deps.createWorkflow({ task, history: record.history })
    : undefined;
  await sendNotice(alarmNotice(task, record, 'compressed', workflow), deps);
  return undefined;
}

/**
 * `recovery-delay`: at most one pending item per metric (the metric state's `recovery_pending`).
 * When it runs, it checks that no alarm of the metric came within the delay after the last one: if
 * one did, it re-arms for the last alarm's time plus the delay; otherwise the last alarm recovers
 * (RECOVERY event and `recovery` notifications with its history, open workflows of the metric
 * finished) and the pending flag is cleared, conditioned on the state not having moved meanwhile.
 */
export async function runRecoveryDelay(
  item: DueItem,
  now: number,
  deps: PipelineDeps = defaultDeps,
): Promise<DueResult> {
  const { task_id, metric } = item.payload as { task_id: number; metric: string };
  const state = await deps.repo.getMetricState(task_id, metric);
  if (!state?.recovery_pending) return undefined;
  const task = await deps.getTask(task_id);
  const delay = task ? recoveryDelaySeconds(task) : undefined;
  const held = task ? heldFor(task, now) : 'drop';
  if (!task || delay === undefined || held === 'drop') {
    return (await deps.repo.clearRecoveryPending(task_id, metric, state.version))
      ? undefined
      : { reschedule: now + 60 };
  }
  if (held) return held;
  const dueAt = (state.last_at ?? 0) + delay;
  if (now < dueAt) return { reschedule: dueAt };
  const record = state.last_uuid ? await deps.repo.getAlarmRecord(task.id, state.last_uuid) : undefined;
  if (record) {
    await sendNotice(recoveryNotice(task, record), deps);
    await deps.finishWorkflowsOfMetric({ task, metric });
  }
  // An alarm came in meanwhile: it found the check pending, so keep it armed.
  return (await deps.repo.clearRecoveryPending(task_id, metric, state.version))
    ? undefined
    : { reschedule: now + 60 };
}
