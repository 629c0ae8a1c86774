import type { Level } from '../../contracts/levels.ts';
import type { CompressNotify } from '../alarms/compress.ts';
import type { Why } from '../alarms/explain.ts';
import { type AlarmLogEntry, type AlarmResult, entryOfRecord, resultOf } from '../alarms/log.ts';
import type { AlarmRecord, PlanKind } from '../alarms/model.ts';
import { selectionOf } from '../reads/alarm-trace.ts';

/**
 * What became of one alarm, in the terms a replay compares: the pipeline's decision (as the alarm
 * log words it), its place in its metric's window, the upgrades it fired, the receiver sets it went
 * to and whether it opened a workflow. The same shape for the recorded decision and a replayed one.
 */
export interface Outcome {
  result: AlarmResult;
  decision: PlanKind;
  /** The level after the filter. */
  level: Level;
  notify: CompressNotify;
  metric?: string;
  batch?: number;
  k?: number;
  /** Upgrade strategies fired (`<index>.<interval>.<count>`). */
  upgrades: string[];
  /**
   * The receiver sets notified (`default`, `d<i>` dispatch item i, `override` the report's own): empty
   * when the alarm notifies nobody (filtered, compressed away, stored only).
   */
  receivers: string[];
  /** A workflow opened for it. */
  workflow: boolean;
}

export const OUTCOME_FIELDS = [
  'result',
  'decision',
  'level',
  'notify',
  'metric',
  'batch',
  'k',
  'upgrades',
  'receivers',
  'workflow',
] as const satisfies readonly (keyof Outcome)[];
export type OutcomeField = (typeof OUTCOME_FIELDS)[number];

/**
 * What a change of configuration changes for people: the outcome, the level, who is told, upgrades
 * and workflows; not where an alarm falls in its window (its metric, batch and position), which
 * fidelity compares too.
 */
export const CHANGE_FIELDS: readonly OutcomeField[] = [
  'result',
  'decision',
  'level',
  'notify',
  'upgrades',
  'receivers',
  'workflow',
];

const NOTIFYING: ReadonlySet<AlarmResult> = new Set(['notified', 'deferred', 'recovered']);

function setsOf(entry: AlarmLogEntry, record: AlarmRecord | undefined, why: Why | undefined): string[] {
  if (!NOTIFYING.has(resultOf(entry))) return [];
  const s = selectionOf(record, why);
  if (s.override) return ['override'];
  return [...s.dispatch.map((i) => `d${i}`), ...(s.defaults ? ['default'] : [])];
}

/** The outcome of an alarm: its record, or (an alarm the pipeline did not store) its log entry. */
export function outcomeOf(entry: AlarmLogEntry, record?: AlarmRecord): Outcome {
  const e = record ? entryOfRecord(record) : entry;
  const why = record?.why ?? entry.why;
  return {
    result: resultOf(e),
    decision: e.decision,
    level: e.level,
    notify: e.notify,
    ...(e.metric ? { metric: e.metric } : {}),
    ...(e.batch ? { batch: e.batch } : {}),
    ...(e.k !== undefined ? { k: e.k } : {}),
    upgrades: (record?.upgrades ?? []).map((u) => u.key),
    receivers: setsOf(e, record, why),
    workflow: !!record?.workflow && (record.notify === 'now' || record.notify === 'deferred'),
  };
}

/** The outcome of a stored alarm's record. */
export const outcomeOfRecord = (record: AlarmRecord): Outcome => outcomeOf(entryOfRecord(record), record);

/** The fields (of `fields`, default all) in which two outcomes differ, in pipeline order. */
export function differences(
  a: Outcome,
  b: Outcome,
  fields: readonly OutcomeField[] = OUTCOME_FIELDS,
): OutcomeField[] {
  return fields.filter((f) => JSON.stringify(a[f]) !== JSON.stringify(b[f]));
}
