/**
 * On-call schedules (API guide §18): types of the stored configuration and of the answers. No I/O
 * here (the web console imports these types too).
 *
 * A schedule keeps every configuration it ever had, each with the instant it took effect from
 * (`effective_from`): an edit takes effect from then on and never changes an answer about an earlier
 * instant. Overrides sit above every layer; the one created last wins where they overlap.
 */

import type { Source } from '../../contracts/oncall.ts';

/** The on-call nouns the queues' messages share live on the contracts floor. */
export {
  ONCALL_CHANNELS,
  type OncallAnswer,
  type OncallChannel,
  type OncallReceiver,
  type Source,
  type SourceKind,
} from '../../contracts/oncall.ts';

export type TurnUnit = 'hour' | 'day' | 'week';

/** A window of local time starting on the given ISO weekdays (Monday = 1); `to <= from` ends the next day. */
export interface Restriction {
  days: number[];
  /** `HH:MM` */
  from: string;
  /** `HH:MM`, or `24:00` (the end of the day). */
  to: string;
}

export interface Layer {
  name: string;
  /** IANA zone of `start` and `restrictions`; the schedule's zone when absent. */
  time_zone?: string;
  /** `YYYY-MM-DDTHH:MM`, local time in the layer's zone: when turn 0 begins. */
  start: string;
  turn: { every: number; unit: TurnUnit };
  /** Turn k belongs to `users[k mod n]`. */
  users: number[];
  restrictions?: Restriction[];
}

/** Gap alarms: gaps inside `required` (default: all the time) that start within `horizon_days`. */
export interface Coverage {
  required?: Restriction[];
  horizon_days: number;
  alarm_task_id: number;
}

/** What an edit changes and what answers about time depend on. */
export interface ScheduleConfig {
  time_zone: string;
  /** Lowest first: a later layer is on top. */
  layers: Layer[];
  fallback?: number[];
  coverage?: Coverage;
}

/** One configuration of a schedule and the instant (Unix seconds) it took effect from. */
export interface ScheduleVersion extends ScheduleConfig {
  /** 1 for the first configuration, +1 for each edit. */
  version: number;
  effective_from: number;
  created_at: number;
  created_by: number;
}

export interface Override {
  /** Increasing per schedule: of two overlapping overrides the greater id (the later created) wins. */
  id: number;
  start: number;
  end: number;
  user: number;
  created_at: number;
  created_by: number;
}

/** The schedule itself: who may see and change it, and its directory fields (not versioned). */
export interface Schedule {
  id: number;
  name: string;
  department_id: number;
  permission: { rw: number[]; ro: number[] };
  created_by: number;
  created_at: number;
  updated_at: number;
  /** The latest version number. */
  version: number;
  /** Tasks whose receivers name the schedule (the reference index keeps it exact). */
  ref_count: number;
  /** SHA-256 (hex) of the calendar feed key; absent when no key is issued. */
  ical_hash?: string;
}

/** Where an answer comes from. */

/** A span with one answer: who is on call and why. */
/** A source in words: `layer 0 (days)`, `override 3`, `fallback`, `none`. */
export function sourceText(s: Source): string {
  if (s.kind === 'override') return `override ${s.override}`;
  if (s.kind === 'layer') return `layer ${s.layer} (${s.name})`;
  return s.kind;
}

export interface Shift {
  start: number;
  end: number;
  uids: number[];
  source: Source;
}

export interface Gap {
  start: number;
  end: number;
}

/** The longest window `final` and `preview` answer for (days). */
export const MAX_WINDOW_DAYS = 90;
export const DAY_SECONDS = 86_400;

/**
 * Due work that checks a schedule's coverage gaps (alarms/oncall-gaps.ts runs it): once when the
 * schedule changes, and every hour while it has coverage rules.
 */
export const COVERAGE_CHECK_KIND = 'schedule-coverage';
