import type { NotificationJob, NotifyScene, RenderContext } from '../../messaging/messages.ts';
import type { AlarmGroup } from '../directory/model.ts';
import {
  type Channels,
  ROBOT_CHANNELS,
  type ReceiverConfig,
  type Robot,
  type RobotChannel,
  USER_CHANNELS,
} from '../tasks/model.ts';

/**
 * Who a message goes to (behavior 7.6). People are merged over every selected receiver set and its
 * alarm groups (de-duplicated by uid): one message per channel. Robots are not: every receiver set
 * (a dispatch item, the defaults, an override, each alarm group) gets its message, and its robots
 * are tried in order for failover within that set only, so item B's robot hears of the alarm even
 * when item A's robot took it. A robot named by two sets is sent to once, by the first.
 */
export interface RobotSet {
  /** Stable within the receiver list: `r<index>` for a receiver's own robots, `r<index>.g<group id>` for a group's. */
  key: string;
  channel: RobotChannel;
  robots: Robot[];
}

export interface Recipients {
  /** People, per user channel (and the first webhook URL named). */
  channels: Channels;
  robotSets: RobotSet[];
}

export function recipientsOf(receivers: ReceiverConfig[], groups: AlarmGroup[]): Recipients {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const sources: { key: string; channels: Channels }[] = [];
  receivers.forEach((r, i) => {
    if (r.channels) sources.push({ key: `r${i}`, channels: r.channels });
    for (const gid of r.alarmgroup ?? []) {
      const g = byId.get(gid);
      if (g?.receiver.channels) sources.push({ key: `r${i}.g${gid}`, channels: g.receiver.channels });
    }
  });
  const channels: Channels = {};
  for (const ch of USER_CHANNELS) {
    const uids = [...new Set(sources.flatMap((s) => s.channels[ch] ?? []))];
    if (uids.length) channels[ch] = uids;
  }
  const webhook = sources.find((s) => s.channels.webhook)?.channels.webhook;
  if (webhook) channels.webhook = webhook;
  const robotSets: RobotSet[] = [];
  for (const channel of ROBOT_CHANNELS) {
    const seen = new Set<string>();
    for (const s of sources) {
      const robots = (s.channels[channel] ?? []).filter((r) => !seen.has(r.webhook));
      for (const r of robots) seen.add(r.webhook);
      if (robots.length) robotSets.push({ key: s.key, channel, robots });
    }
  }
  return { channels, robotSets };
}

/** Alarm group ids referenced by receivers (to load them in one batch). */
export function alarmGroupIds(receivers: ReceiverConfig[]): number[] {
  return [...new Set(receivers.flatMap((r) => r.alarmgroup ?? []))];
}

/**
 * The notification jobs of a message: one per user channel with people, one per robot set. A robot
 * channel with a single set keeps the plain id `<prefix>:<channel>`; with several, each set's job is
 * `<prefix>:<channel>:<set key>` (ids are deterministic: a replayed producer makes the same ones).
 */
export function channelJobs(
  recipients: Recipients,
  base: { job_id: string; task_id: number; scene: NotifyScene; context: RenderContext },
): NotificationJob[] {
  const jobs: NotificationJob[] = [];
  for (const ch of USER_CHANNELS) {
    const users = recipients.channels[ch];
    if (users?.length)
      jobs.push({ kind: 'notify', ...base, job_id: `${base.job_id}:${ch}`, channel: ch, users });
  }
  for (const ch of ROBOT_CHANNELS) {
    const sets = recipients.robotSets.filter((s) => s.channel === ch);
    for (const s of sets) {
      const job_id = sets.length === 1 ? `${base.job_id}:${ch}` : `${base.job_id}:${ch}:${s.key}`;
      jobs.push({ kind: 'notify', ...base, job_id, channel: ch, robots: s.robots });
    }
  }
  return jobs;
}
