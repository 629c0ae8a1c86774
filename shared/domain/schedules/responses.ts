/**
 * What the schedule routes answer with (the envelope's `data`): the types the use cases return and
 * the OpenAPI document describes (npm run gen:openapi).
 */
import type { SummaryPerson } from '../directory/model.ts';
import type { Coverage, Gap, Layer, Override, Source } from './model.ts';

/** A version of the configuration: what it holds is the schedule's configuration from then on. */
export interface VersionSummary {
  version: number;
  /** Unix seconds it takes (or took) effect from; the first version answers for all time before too. */
  effective_from: number;
  created_at: number;
  created_by: number;
}

/** GET /schedule/show, and the answer of store and update: the schedule and its configuration now. */
export interface ScheduleShown {
  schedule: {
    id: number;
    name: string;
    department_id: number;
    department: { id: number; name: string } | null;
    permission: { rw: SummaryPerson[]; ro: SummaryPerson[] };
    /** The configuration in force now. */
    version: number;
    effective_from: number;
    time_zone: string;
    layers: Layer[];
    fallback: number[];
    coverage: Coverage | null;
    /** Every version, oldest first (those after `version` are still to take effect). */
    versions: VersionSummary[];
    /** Overrides not yet ended, by their end. */
    overrides: Override[];
    /** Tasks whose receivers name the schedule (it cannot be deleted while there are any). */
    tasks: number;
    /** Whether a calendar feed key is issued. */
    ical: boolean;
    created_by: number;
    created_at: number;
    updated_at: number;
  };
}

/** One schedule in the listing. */
export interface ScheduleSummary {
  id: number;
  name: string;
  department_id: number;
  /** The acting user's access: `rw` may change it, `ro` may read it (role 9: `rw`). */
  access: 'rw' | 'ro';
  tasks: number;
  updated_at: number;
}

/** GET /schedule/list: the schedules the acting user may read, by name. */
export interface ScheduleList {
  schedules: ScheduleSummary[];
  /** Pass as `cursor` for the next page; empty when there is none. */
  next_cursor: string;
}

/** DELETE /schedule */
export interface ScheduleDeleted {
  id: number;
}

/** GET /schedule/oncall: who is on call at an instant, why, and the shift it falls in. */
export interface OncallNow {
  at: number;
  users: SummaryPerson[];
  source: Source;
  shift: { start: number; end: number };
}

/** A span with one answer, the people by uid. */
export interface FinalShift {
  start: number;
  end: number;
  uids: number[];
  source: Source;
}

/** GET /schedule/final: the shifts of a window (adjacent equal ones merged), its gaps and coverage. */
export interface FinalShifts {
  from: number;
  to: number;
  shifts: FinalShift[];
  gaps: Gap[];
  /** Share of the window someone is on call, percent (two decimals). */
  coverage_pct: number;
  /** The people the shifts name. */
  people: SummaryPerson[];
}

/** A span where a configuration answers differently from the saved one. */
export interface ShiftChange {
  start: number;
  end: number;
  before: { uids: number[]; source: Source };
  after: { uids: number[]; source: Source };
}

/** POST /schedule/preview: `final` for an unsaved configuration, and what it changes. */
export interface SchedulePreview extends FinalShifts {
  /** When the configuration would take effect (the first configuration of a schedule: always). */
  effective_from: number;
  changes: ShiftChange[];
}

/** POST /schedule/override, DELETE /schedule/override */
export interface OverrideSaved {
  id: number;
  override: Override;
}

export interface OverrideEnded {
  id: number;
  override_id: number;
  /** `deleted` (it had not started) or `ended` (it had: it now ends at `end`, the past stays). */
  result: 'deleted' | 'ended';
  end: number;
}

/** PUT /schedule/ical: the feed's key, shown this once (or nothing, when revoked). */
export interface IcalKey {
  id: number;
  /** 40 hex characters; absent when the key was revoked. */
  key?: string;
  /** The feed's path and query for a calendar client (prefix the service's base URL). */
  feed?: string;
}
