import type { DueHandler } from '../due/runner.ts';
import { checkHeartbeat, HEARTBEAT_KIND } from './heartbeat.ts';
import { FLUSH_KIND, flushCompressWindow, RECOVERY_DELAY_KIND, runRecoveryDelay } from './delayed.ts';
import { COVERAGE_CHECK_KIND } from '../schedules/model.ts';
import { checkCoverage } from './oncall-gaps.ts';

/** Due work of the alarm path. */
export const alarmDueHandlers: Record<string, DueHandler> = {
  // Alarm pipeline: the delay strategy's window flush, delay-mode recovery checks.
  [FLUSH_KIND]: (item, now) => flushCompressWindow(item, now),
  [RECOVERY_DELAY_KIND]: (item, now) => runRecoveryDelay(item, now),
  // Heartbeat: a task silent past its interval raises an alarm.
  [HEARTBEAT_KIND]: (item, now) => checkHeartbeat(item, now),
  // On-call schedules: coverage gaps inside the horizon raise an alarm to the coverage task.
  [COVERAGE_CHECK_KIND]: (item, now) => checkCoverage(item, now),
};
