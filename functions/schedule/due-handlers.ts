import { alarmDueHandlers } from '#shared/domain/alarms/due-work.ts';
import type { DueHandler } from '#shared/domain/due/runner.ts';
import { taskDueHandlers } from '#shared/domain/tasks/due-work.ts';
import { workflowDueHandlers } from '#shared/domain/workflows/due-work.ts';

/**
 * Every kind of due work and the domain function that performs it. Each feature exports its own
 * kinds (`<feature>/due-work.ts`) and this registry composes them, so the due queue (shared/domain/due)
 * knows no feature; the scheduled function (run-due-work.ts) runs them.
 */
export const dueHandlers: Record<string, DueHandler> = {
  // Workflows: publish an operation's events (outbox) and fire reminders.
  ...workflowDueHandlers,
  // Tasks: end a pause (API guide §5.9).
  ...taskDueHandlers,
  // Alarm pipeline: the delay strategy's window flush, delay-mode recovery checks; heartbeats.
  ...alarmDueHandlers,
};
