import { fireReminder } from '../workflows/reminders.ts';
import { ANNOUNCE_KIND, REMIND_KIND, runAnnouncement } from '../workflows/service.ts';
import { expirePause, PAUSE_EXPIRY } from '../tasks/service.ts';
import {
  FLUSH_KIND,
  flushCompressWindow,
  RECOVERY_DELAY_KIND,
  runRecoveryDelay,
} from '../alarms/pipeline.ts';
import { checkHeartbeat, HEARTBEAT_KIND } from '../alarms/heartbeat.ts';
import type { DueHandler } from './runner.ts';

/**
 * Every kind of due work and the domain function that performs it. Each module registers its
 * kinds here; the scheduled function (functions/schedule/run-due-work.ts) runs them.
 */
export const dueHandlers: Record<string, DueHandler> = {
  // Workflows: publish an operation's events (outbox) and fire reminders.
  [ANNOUNCE_KIND]: async (item) => {
    await runAnnouncement(item);
    return undefined;
  },
  [REMIND_KIND]: (item, now) => fireReminder(item, now),
  // Tasks: end a pause (API guide §5.9).
  [PAUSE_EXPIRY]: (item, now) => expirePause(item, now),
  // Alarm pipeline: the delay strategy's window flush, delay-mode recovery checks.
  [FLUSH_KIND]: (item, now) => flushCompressWindow(item, now),
  [RECOVERY_DELAY_KIND]: (item, now) => runRecoveryDelay(item, now),
  // Heartbeat: a task silent past its interval raises an alarm.
  [HEARTBEAT_KIND]: (item, now) => checkHeartbeat(item, now),
};
