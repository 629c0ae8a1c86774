import { batchPerTurn } from '../../batch.ts';
import type { DueHandler } from '../due/runner.ts';
import type { Effects } from '../webhooks/deliver-now.ts';
import { checkHeartbeat, HEARTBEAT_KIND } from './heartbeat.ts';
import { FLUSH_KIND, flushCompressWindow, RECOVERY_DELAY_KIND, runRecoveryDelay } from './delayed.ts';
import { defaultDeps, type PipelineDeps } from './pipeline-deps.ts';
import { COVERAGE_CHECK_KIND } from '../schedules/model.ts';
import { checkCoverage } from './oncall-gaps.ts';

/** The alarm records the items of a due batch ask for in one turn, read in one BatchGetItem. */
const recordsOfBatch = batchPerTurn((refs: { taskId: number; uuid: string }[]) =>
  defaultDeps.repo.getAlarmRecords(refs),
);

/** The pipeline's deps for its delayed work: records read together, effects sent with the batch's. */
function dueDeps(effects?: Effects): PipelineDeps {
  return {
    ...defaultDeps,
    repo: { ...defaultDeps.repo, getAlarmRecord: (taskId, uuid) => recordsOfBatch({ taskId, uuid }) },
    ...(effects ? { publishEvents: effects.publishEvents, publishJobs: effects.publishJobs } : {}),
  };
}

/** Due work of the alarm path. */
export const alarmDueHandlers: Record<string, DueHandler> = {
  // Alarm pipeline: the delay strategy's window flush, delay-mode recovery checks.
  [FLUSH_KIND]: (item, now, effects) => flushCompressWindow(item, now, dueDeps(effects)),
  [RECOVERY_DELAY_KIND]: (item, now, effects) => runRecoveryDelay(item, now, dueDeps(effects)),
  // Heartbeat: a task silent past its interval raises an alarm.
  [HEARTBEAT_KIND]: (item, now) => checkHeartbeat(item, now),
  // On-call schedules: coverage gaps inside the horizon raise an alarm to the coverage task.
  [COVERAGE_CHECK_KIND]: (item, now) => checkCoverage(item, now),
};
