/**
 * What the alarm routes answer with (the envelope's `data`): the types the use cases return and the
 * OpenAPI document describes (npm run gen:openapi).
 */
import type { DeliverySummary, EventDeliveries, JobDeliveries } from '../deliveries/trace.ts';
import type { OncallAnswer } from '../../contracts/oncall.ts';
import type { Level } from '../../contracts/levels.ts';
import type { Channels } from '../../contracts/receivers.ts';
import type { NamedRef } from '../tasks/responses.ts';
import type { WorkflowDetail } from '../workflows/responses.ts';
import type { ConditionTrace } from './explain.ts';
import type { AlarmResult, MinuteCount } from './log.ts';

/** An alarm as the history shows it. */
export interface AlarmView {
  uuid: string;
  history_id: number;
  created_at: number;
  level: Level;
  level_name: string;
  /** The level it was reported with (the filter may change it). */
  reported_level: Level;
  outcome: AlarmResult;
  /** The pipeline's decision. */
  decision: string;
  metric?: string;
  batch?: number;
  /** Compressed alarms: position in the window. */
  k?: number;
  upgrades: number;
  stored: boolean;
  notice_time?: number;
  /** The alarm content (stored alarms only: a task that stores nothing keeps no content). */
  ctn?: Record<string, unknown>;
}

/** A window of time, Unix seconds, both ends included. */
export interface TimeWindow {
  from: number;
  to: number;
}

/** GET /alarmtask/alarms: newest first. */
export interface AlarmList {
  alarms: AlarmView[];
  /** Empty when there is nothing more. */
  next_cursor: string;
  window: TimeWindow;
}

/** GET /alarmtask/alarms/stats */
export interface AlarmStats {
  window: TimeWindow;
  minutes: MinuteCount[];
  /** False when the window held more alarms than one request counts (older minutes are partial). */
  complete: boolean;
}

/** One alarm, with when it was reported, processed and will be forgotten. */
export interface AlarmDetail extends AlarmView {
  reported_at?: number;
  processed_at?: number;
  expires_at?: number;
}

/** GET /alarmtask/alarm */
export interface AlarmShown {
  alarm: AlarmDetail;
}

/** What every stage of the trace says: its result in words and a sentence. */
interface StageOutcome {
  result: string;
  text: string;
}

/** The recovery stage: the recovery condition that matched, and the ones that did not. */
export interface RecoveryStage extends StageOutcome {
  stage: 'recovery';
  match?: ConditionTrace;
  misses?: ConditionTrace[];
}

/** The filter stage: its match, and the level it set (absent when the filter is off). */
export interface FilterStage extends StageOutcome {
  stage: 'filter';
  level_from?: Level;
  level_to?: Level;
  match?: ConditionTrace;
  misses?: ConditionTrace[];
}

/** The compression stage: the metric, the batch and window the alarm fell in (compressed alarms). */
export interface CompressStage extends StageOutcome {
  stage: 'compress';
  metric?: string;
  batch?: number;
  /** Position in the window. */
  k?: number;
  /** The strategy's count. */
  n?: number;
  /** The window, Unix seconds. */
  window?: { start: number; end: number };
  match?: ConditionTrace;
  misses?: ConditionTrace[];
}

/** One upgrade strategy as the alarm left it: its count over the trailing interval, whether it fired. */
export interface UpgradeStrategyTrace {
  index: number;
  /** Minutes (absent when the strategy was removed since). */
  interval?: number;
  count?: number;
  counted: number;
  fired: boolean;
}

/** The upgrade stage: each strategy's count. */
export interface UpgradeStage extends StageOutcome {
  stage: 'upgrade';
  strategies: UpgradeStrategyTrace[];
}

/** One stage of the pipeline's decision: its result in words, and the stage's own details. */
export type TraceStage = RecoveryStage | FilterStage | CompressStage | UpgradeStage;

/** Who the alarm went to and why. */
export interface TraceReceivers {
  text: string;
  sets: { set: string; text: string; match?: ConditionTrace }[];
  /** Dispatch conditions that did not match. */
  misses?: ConditionTrace[];
  alarm_groups?: NamedRef[];
  /** The people per user channel (and the webhook, its origin and path only). */
  people?: Channels;
  robots?: { set: string; channel: string; robots: string[] }[];
  /** The receiver the report carried, credentials masked. */
  override?: Channels;
  /**
   * What each schedule a receiver named answered when the message was made (recorded with the
   * notifications): who was on call, from which layer or override, and the shift; or nobody.
   */
  oncall?: TraceOncall[];
}

/** A schedule's answer for one message of the alarm (`scene`), as recorded, in words too. */
export interface TraceOncall extends OncallAnswer {
  scene: string;
  /** The schedule's name (absent when it has been deleted since). */
  name?: string;
  text: string;
}

/** GET /alarmtask/alarm/trace: why was (or wasn't) anyone notified of this alarm. */
export interface AlarmTrace {
  alarm: AlarmView & {
    task: NamedRef;
    reported_at?: number;
    processed_at?: number;
    expires_at: number;
  };
  summary: string;
  delivery: DeliverySummary;
  configuration: {
    version_then: number | null;
    version_now: number;
    changed: boolean;
    note: string;
  };
  stages: TraceStage[];
  receivers?: TraceReceivers;
  notifications: JobDeliveries[];
  webhooks: EventDeliveries[];
  workflow: WorkflowDetail | null;
  /** The people the trace names by uid (receivers, notification targets), as the directory names them. */
  users: { uid: number; username: string }[];
}

/** PUT /alarmtask/intake: the new intake token (shown once; null when revoked). */
export interface IntakeTokenSet {
  id: number;
  intake_token: string | null;
}

/** PUT /alarmtask/intake with `fixed_sign`. */
export interface FixedSignSet {
  id: number;
  fixed_sign: 0 | 1;
}

/** PUT /alarmtask/heartbeat */
export interface HeartbeatSet {
  id: number;
  /** Minutes; 0: off. */
  interval: number;
  /** The level of a missed heartbeat's alarm; null when off. */
  level: Level | null;
}

/** GET|POST /alarm/heartbeat */
export interface HeartbeatPinged {
  /** Unix seconds. */
  last_seen: number;
  interval: number;
}
