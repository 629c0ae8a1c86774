/**
 * The receiver channels of a task, an alarm group, a dispatch item or a report override (API guide
 * §5.3): people by uid per user channel, group robots, the task webhook. No I/O here (the web console
 * imports these lists through tasks/model.ts).
 */
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
