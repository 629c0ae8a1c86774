/**
 * An alarm's level (API guide §7.1): 0 notice, 1 warning, 2 error, 3 urgent; templates name it by
 * these words (`{history.level}`). Part of the contracts floor.
 */
export type Level = 0 | 1 | 2 | 3;
export const LEVEL_NAMES = ['notice', 'warning', 'error', 'urgent'] as const;
