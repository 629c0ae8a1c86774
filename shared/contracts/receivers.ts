/**
 * Who receives an alarm (API guide §5.3): the receiver channels of a task, an alarm group, a dispatch
 * item or a report override (people by uid per user channel, group robots, the task webhook), and the
 * receiver configuration that names them. Part of the contracts floor: pure data that the queues'
 * messages, the domain, the web console and the deployment share.
 */
import type { OncallReceiver } from './oncall.ts';

/** A group robot (DingTalk, Yach): its webhook URL and, for signed robots, its secret. */
export interface Robot {
  webhook: string;
  secret?: string;
}

export const USER_CHANNELS = ['sms', 'email', 'phone', 'dingworker', 'yachworker', 'wechat'] as const;
export const ROBOT_CHANNELS = ['dinggroup', 'yachgroup'] as const;
export type UserChannel = (typeof USER_CHANNELS)[number];
/** Every channel a message can be sent on (templates are per scene and per one of these). */
export const NOTIFY_CHANNELS = [
  'sms',
  'email',
  'phone',
  'dingworker',
  'dinggroup',
  'yachworker',
  'yachgroup',
  'wechat',
] as const;
export type RobotChannel = (typeof ROBOT_CHANNELS)[number];
export type Channel = UserChannel | RobotChannel | 'webhook';

export interface Channels {
  sms?: number[];
  email?: number[];
  phone?: number[];
  dingworker?: number[];
  yachworker?: number[];
  wechat?: number[];
  dinggroup?: Robot[];
  yachgroup?: Robot[];
  /** Stored as the URL string. */
  webhook?: string;
}

/** One rule of an alarm condition (API guide §6): a field of the alarm, an operator, a threshold. */
export interface Rule {
  field: string;
  operator: string;
  threshold?: string;
}
export interface Condition {
  rule: Rule[];
}

export interface DispatchItem {
  conditions: Condition[];
  receiver: ReceiverConfig;
}

export interface ReceiverConfig {
  alarmgroup?: number[];
  channels?: Channels;
  /** Whoever each named schedule has on call when a message is made, on the listed channels. */
  oncall?: OncallReceiver[];
  dispatch?: DispatchItem[];
  /** 1 lazy (default), 2 non-lazy. */
  mode?: 1 | 2;
}
