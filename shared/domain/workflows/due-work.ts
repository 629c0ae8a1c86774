import type { DueHandler } from '../due/runner.ts';
import { fireReminder } from './reminders.ts';
import { ANNOUNCE_KIND, REMIND_KIND, runAnnouncement } from './announce.ts';

/** Due work of workflows: publish an operation's events (outbox) and fire reminders. */
export const workflowDueHandlers: Record<string, DueHandler> = {
  [ANNOUNCE_KIND]: async (item) => {
    await runAnnouncement(item);
    return undefined;
  },
  [REMIND_KIND]: (item, now) => fireReminder(item, now),
};
