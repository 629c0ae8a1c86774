import type { DueHandler } from './runner.ts';

/**
 * Every kind of due work and the domain function that performs it. Each module registers its
 * kinds here; the scheduled function (functions/schedule/run-due-work.ts) runs them.
 */
export const dueHandlers: Record<string, DueHandler> = {};
