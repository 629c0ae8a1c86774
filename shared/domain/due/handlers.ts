import { expirePause, PAUSE_EXPIRY } from '../tasks/service.ts';
import type { DueHandler } from './runner.ts';

/**
 * Every kind of due work and the domain function that performs it. Each module registers its
 * kinds here; the scheduled function (functions/schedule/run-due-work.ts) runs them.
 */
export const dueHandlers: Record<string, DueHandler> = {
  // Tasks: end a pause (behavior 5.4).
  [PAUSE_EXPIRY]: (item, now) => expirePause(item, now),
};
