import type { Task } from '../tasks/model.ts';
import type { ConditionTrace } from '../alarms/explain.ts';
import { type AlarmLogEntry, entryOfRecord } from '../alarms/log.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { receiverReasons, stagesOf } from '../reads/alarm-trace.ts';
import { CHANGE_FIELDS, differences, type Outcome, type OutcomeField, outcomeOfRecord } from './outcomes.ts';

/**
 * What a replay compares: the recorded decisions against the saved configuration's (fidelity, each
 * mismatch with why), and against the edited configuration's (the changes, each with the stage and
 * rule that decided it, in the decision trace's words). Pure.
 */

export type MismatchReason = 'configuration' | 'warm-up' | 'unexplained';

export interface Mismatch {
  uuid: string;
  history_id: number;
  processed_at: number;
  fields: OutcomeField[];
  recorded: Outcome;
  current: Outcome;
  reasons: { reason: MismatchReason; text: string }[];
}

export interface Fidelity {
  /** The share of replayed alarms the saved configuration decides as recorded (1 when none). */
  share: number;
  matched: number;
  compared: number;
  /** The first MAX_LISTED mismatches, in order. */
  mismatches: Mismatch[];
  mismatches_total: number;
}

export type ChangeStage = 'recovery' | 'filter' | 'compress' | 'upgrade' | 'receivers' | 'workflow';

export interface Change {
  uuid: string;
  history_id: number;
  processed_at: number;
  level: number;
  fields: OutcomeField[];
  recorded: Outcome;
  edited: Outcome;
  /** The first stage that decided differently, and how the edited configuration decided there. */
  stage: ChangeStage;
  text: string;
  /** The condition that matched at that stage, with the values its rules saw. */
  rule?: ConditionTrace;
  /** How that stage decided when the alarm was recorded. */
  recorded_text: string;
}

/** Most mismatches and changes an answer lists (the totals count them all). */
export const MAX_LISTED = 200;

/** Unix seconds as ISO 8601 UTC, to the second. */
export const iso = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');

/** Whether the configuration was saved after `record` was decided (its reasons name the version). */
export function configurationChanged(task: Task, record: AlarmRecord): string | undefined {
  const then = record.why?.task_version;
  if (task.config_version !== undefined) {
    const changed =
      then === undefined ? record.processed_at < (task.config_saved_at ?? 0) : then < task.config_version;
    return changed
      ? `the configuration was saved after this alarm (version ${task.config_version}, ${iso(task.config_saved_at ?? task.updated_at)}); it was decided under version ${then ?? 'unknown'}`
      : undefined;
  }
  // A task saved before configuration versions were kept: any change of the task counts.
  const changed = then === undefined ? task.updated_at > record.processed_at : then !== task.version;
  return changed
    ? `the task changed after this alarm (version ${task.version}, ${iso(task.updated_at)}); it was decided under version ${then ?? 'unknown'}`
    : undefined;
}

/**
 * Metrics whose first replayed alarm was not the first of its window or upgrade count: the window
 * began before the replay window, which starts each metric from nothing.
 */
export function warmMetrics(records: AlarmRecord[]): Map<string, string> {
  const warm = new Map<string, string>();
  const seen = new Set<string>();
  for (const r of records) {
    const metric = r.history.metric;
    if (!metric || seen.has(metric)) continue;
    seen.add(metric);
    if ((r.k ?? 1) > 1)
      warm.set(
        metric,
        `its metric's compression window began before the replay window (at ${iso(r.window?.start ?? r.processed_at)}; this alarm was at position ${r.k} in it): the replay starts each metric from nothing`,
      );
    else if ((r.upgrade_counts ?? []).some((n) => n > 1))
      warm.set(
        metric,
        "its metric's upgrade counts include alarms from before the replay window: the replay starts each metric from nothing",
      );
  }
  return warm;
}

export function fidelityOf(task: Task, records: AlarmRecord[], current: Map<string, Outcome>): Fidelity {
  const warm = warmMetrics(records);
  const mismatches: Mismatch[] = [];
  let total = 0;
  for (const r of records) {
    const recorded = outcomeOfRecord(r);
    const replayed = current.get(r.uuid);
    if (!replayed) continue;
    const fields = differences(recorded, replayed);
    if (fields.length === 0) continue;
    total++;
    if (mismatches.length >= MAX_LISTED) continue;
    const reasons: Mismatch['reasons'] = [];
    const config = configurationChanged(task, r);
    if (config) reasons.push({ reason: 'configuration', text: config });
    const metric = warm.get(r.history.metric) ?? warm.get(replayed.metric ?? '');
    if (metric) reasons.push({ reason: 'warm-up', text: metric });
    if (reasons.length === 0)
      reasons.push({
        reason: 'unexplained',
        text: 'the saved configuration decided otherwise, unchanged since',
      });
    mismatches.push({
      uuid: r.uuid,
      history_id: r.history.id,
      processed_at: r.processed_at,
      fields,
      recorded,
      current: replayed,
      reasons,
    });
  }
  const compared = records.filter((r) => current.has(r.uuid)).length;
  return {
    share: compared === 0 ? 1 : (compared - total) / compared,
    matched: compared - total,
    compared,
    mismatches,
    mismatches_total: total,
  };
}

/** The first stage, in pipeline order, that the differing fields belong to. */
export function stageOf(fields: OutcomeField[], a: Outcome, b: Outcome): ChangeStage {
  const has = (f: OutcomeField) => fields.includes(f);
  if (has('decision') && (a.decision === 'recovery' || b.decision === 'recovery')) return 'recovery';
  if (has('level') || (has('result') && (a.result === 'filtered' || b.result === 'filtered')))
    return 'filter';
  if (['result', 'decision', 'notify'].some((f) => has(f as OutcomeField))) return 'compress';
  if (has('upgrades')) return 'upgrade';
  if (has('receivers')) return 'receivers';
  return 'workflow';
}

interface Decided {
  task: Task;
  entry: AlarmLogEntry;
  record?: AlarmRecord;
  outcome: Outcome;
}

/** A stage's decision in the decision trace's words. */
function stageText(stage: ChangeStage, d: Decided): { text: string; rule?: ConditionTrace } {
  const why = d.record?.why ?? d.entry.why;
  if (stage === 'receivers') {
    const reasons = receiverReasons(
      d.outcome.receivers.map((set) => ({ set })),
      why,
    );
    return {
      text: reasons.length ? reasons.map((r) => r.text).join('; ') : 'nobody is notified',
      rule: reasons.find((r) => r.match)?.match,
    };
  }
  if (stage === 'workflow') {
    return {
      text: d.outcome.workflow
        ? 'workflows are on: a pending workflow opens for it'
        : 'no workflow opens for it',
    };
  }
  const found = stagesOf(d.task, d.entry, why, d.record).find((s) => s.stage === stage);
  if (!found) return { text: `${stage}: off` };
  return { text: found.text, rule: 'match' in found ? found.match : undefined };
}

export function changesOf(
  records: AlarmRecord[],
  current: Task,
  edited: {
    task: Task;
    outcomes: Map<string, Outcome>;
    entry: (uuid: string) => AlarmLogEntry | undefined;
    record: (uuid: string) => AlarmRecord | undefined;
  },
): { changes: Change[]; total: number } {
  const changes: Change[] = [];
  let total = 0;
  for (const r of records) {
    const recorded = outcomeOfRecord(r);
    const outcome = edited.outcomes.get(r.uuid);
    const entry = edited.entry(r.uuid);
    if (!outcome || !entry) continue;
    const fields = differences(recorded, outcome, CHANGE_FIELDS);
    if (fields.length === 0) continue;
    total++;
    if (changes.length >= MAX_LISTED) continue;
    const stage = stageOf(fields, recorded, outcome);
    const now = stageText(stage, { task: edited.task, entry, record: edited.record(r.uuid), outcome });
    const then = stageText(stage, { task: current, entry: entryOfRecord(r), record: r, outcome: recorded });
    changes.push({
      uuid: r.uuid,
      history_id: r.history.id,
      processed_at: r.processed_at,
      level: r.reported_level,
      fields,
      recorded,
      edited: outcome,
      stage,
      text: now.text,
      ...(now.rule ? { rule: now.rule } : {}),
      recorded_text: then.text,
    });
  }
  return { changes, total };
}
