/**
 * On-call nouns that receivers and the notification queue's messages share (API guide §18): a
 * receiver naming a schedule, and the schedule's answer recorded with the messages it resolved to.
 * Part of the contracts floor: pure data, importing nothing.
 */

/** Who answers at an instant: an override, a layer's turn, the fallback, or nobody (a gap). */
export type SourceKind = 'override' | 'layer' | 'fallback' | 'none';

export interface Source {
  kind: SourceKind;
  /** The layer's index (`layer`). */
  layer?: number;
  /** The layer's name (`layer`). */
  name?: string;
  /** The override's id (`override`). */
  override?: number;
}

export const ONCALL_CHANNELS = ['sms', 'phone', 'email', 'dingworker', 'yachworker', 'wechat'] as const;
export type OncallChannel = (typeof ONCALL_CHANNELS)[number];

/** A receiver that pages whoever is on call in a schedule, on the listed user channels. */
export interface OncallReceiver {
  schedule_id: number;
  channels: OncallChannel[];
}

/**
 * A schedule's answer for a receiver at the instant a message was made: recorded with the
 * message's notifications and shown in an alarm's decision trace.
 */
export interface OncallAnswer {
  schedule_id: number;
  /** Unix seconds the answer is about. */
  at: number;
  uids: number[];
  source: Source;
  shift: { start: number; end: number };
  channels: OncallChannel[];
  /** The schedule no longer exists (deleted after the receiver named it). */
  missing?: true;
}
