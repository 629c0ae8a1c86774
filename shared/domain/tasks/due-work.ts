import type { DueHandler } from '../due/runner.ts';
import { expirePause, PAUSE_EXPIRY } from './service.ts';

/** Due work of tasks: end a pause (API guide §5.9). */
export const taskDueHandlers: Record<string, DueHandler> = {
  [PAUSE_EXPIRY]: (item, now) => expirePause(item, now),
};
