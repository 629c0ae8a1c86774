import type { Change, Fidelity } from './compare.ts';
import type { SampleMessage } from './samples.ts';
import type { AssertionResult, ScenarioResult } from './scenario.ts';
import type { PersonMessages, ReplaySummary } from './summary.ts';

/** `POST /alarmtask/replay`, `GET /alarmtask/replay`: a replay still running on its queue. */
export interface ReplayRunning {
  replay_id: string;
  status: 'running';
  task_id: number;
  created_at: number;
}

/** A replay that could not finish (its window held too many alarms, the task was deleted ...). */
export interface ReplayFailed {
  replay_id: string;
  status: 'failed';
  task_id: number;
  created_at: number;
  error: { code: number; msg: string };
}

/** A finished replay: what the window's alarms came to, and would come to under the edited configuration. */
export interface ReplayDone {
  replay_id: string;
  status: 'done';
  task_id: number;
  created_at: number;
  /** The task's version the replay read: a save with `replay_id` must find it unchanged. */
  task_version: number;
  /** Whether a configuration was asked about (else `edited` is the saved configuration again). */
  edited: boolean;
  window: { from: number; to: number; last?: number };
  alarms: {
    /** Every alarm the task's log holds in the window: skipped + replayable. */
    in_window: number;
    replayable: number;
    skipped: number;
    /** Not stored (the task stored nothing, the filter dropped it), or stored but expired since. */
    skipped_not_stored: number;
    skipped_expired: number;
  };
  /** How far the saved configuration, replayed, reproduces what was recorded. */
  fidelity: Fidelity;
  summary: { recorded: ReplaySummary; current: ReplaySummary; edited: ReplaySummary };
  /** Per person: messages the recorded decisions sent, and the edited configuration would send. */
  people: PersonMessages[];
  /**
   * Alarms whose outcome the edited configuration changes (result, level, who is told, upgrades,
   * workflow; not merely their place in a window): the first 200.
   */
  changes: Change[];
  changes_total: number;
  /** One rendered message per scene the changed alarms would send. */
  samples: SampleMessage[];
  /** The scenario's alarms as the edited configuration decides them, after the window. */
  scenario: ScenarioResult[];
  assertions: AssertionResult[];
  /** Every assertion passed (null without any). */
  passed: boolean | null;
  /** What the replay could not know, in words (today's directory used, a configuration saved within the window ...). */
  notes: string[];
}

export type ReplayAnswer = ReplayRunning | ReplayFailed | ReplayDone;
