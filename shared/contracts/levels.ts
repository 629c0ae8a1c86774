/**
 * The levels of an alarm, as reports, conditions and templates name them. Part of the contracts floor
 * (shared/contracts): pure data.
 */

/** An alarm's level (API guide §7.1): 0 notice, 1 warning, 2 error, 3 urgent. */
export type Level = 0 | 1 | 2 | 3;
/** The levels by name, as templates render them (`{history.level}`). */
export const LEVEL_NAMES = ['notice', 'warning', 'error', 'urgent'] as const;
