import { type AlarmFacts, firstMatch } from '../conditions/evaluate.ts';
import type { Task } from '../tasks/model.ts';

/**
 * The recovery stage (API guide §9.2), pure decisions. The delay mode's due work lives in
 * delayed.ts (it needs I/O).
 */
export const RECOVERY_CONDITION = 1;
export const RECOVERY_DELAY = 2;

/** Condition mode: the alarm matches one of the recovery conditions. */
export function isRecoveryAlarm(task: Pick<Task, 'recovery'>, facts: AlarmFacts): boolean {
  const r = task.recovery;
  return !!r?.enable && r.mode === RECOVERY_CONDITION && firstMatch(r.conditions, facts) >= 0;
}

/**
 * Delay mode: seconds without an alarm of a metric after which its last alarm recovers, or undefined
 * when delay recovery does not apply (it needs compression, hence stored alarms).
 */
export function recoveryDelaySeconds(
  task: Pick<Task, 'recovery' | 'compress' | 'flag_save_db'>,
): number | undefined {
  const r = task.recovery;
  if (!r?.enable || r.mode !== RECOVERY_DELAY || !r.delay_interval || r.delay_interval <= 0) return undefined;
  if (!task.compress?.enable || task.flag_save_db !== 1) return undefined;
  return r.delay_interval * 60;
}
