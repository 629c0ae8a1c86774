import type { NotificationJob } from '../../contracts/messages.ts';
import type { AlarmGroup } from '../directory/model.ts';
import {
  type Channels,
  ROBOT_CHANNELS,
  type ReceiverConfig,
  type Robot,
  type RobotChannel,
  USER_CHANNELS,
} from '../../contracts/receivers.ts';
import { sealRobot } from '../channels/robots.ts';
import type { OncallAnswer } from '../../contracts/oncall.ts';

/**
 * One receiver set of a message (API guide §9.7): a receiver configuration and, in `set`, a key naming
 * where it comes from, stable across replays: `d<i>` dispatch item i, `default` the task's default
 * receivers, `override` a report's receiver (see `selectedReceivers`). Without one of these keys
 * (or when it repeats) the set is `r<its index in the list>`.
 */
export type ReceiverSet = ReceiverConfig & { set?: string };

/** The keys a receiver set may carry (job ids stay short and predictable whatever a config holds). */
const SET_KEY = /^(d\d{1,4}|default|override)$/;

export interface RobotSet {
  /** The receiver set's key, or `g<id>` for the robots of alarm group `id`. */
  key: string;
  channel: RobotChannel;
  robots: Robot[];
}

export interface Recipients {
  /** People, per user channel (and the first webhook URL named). */
  channels: Channels;
  robotSets: RobotSet[];
  /** The answers of the schedules the receivers named (oncall.ts), recorded with the notifications. */
  oncall?: OncallAnswer[];
}

/**
 * Who a message goes to (API guide §9.7). People are merged over every selected receiver set and its
 * alarm groups (de-duplicated by uid): one message per channel. Robots are not: every receiver set
 * (a dispatch item, the defaults, an override, each alarm group) gets its message, and its robots
 * are tried in order for failover within that set only, so item B's robot hears of the alarm even
 * when item A's robot took it. A robot (by webhook) that is the first robot of an earlier set is
 * left out of later sets (the earlier set sends to it first); a robot that was only a fallback
 * earlier stays in a later set, so that set's chat hears of the alarm even when the earlier set's
 * first robot succeeded. An alarm group named by two sets is one set, in the place of its first
 * mention.
 */
export function recipientsOf(receivers: ReceiverSet[], groups: AlarmGroup[]): Recipients {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const sources: { key: string; channels: Channels }[] = [];
  const keys = new Set<string>();
  const groupsSeen = new Set<number>();
  receivers.forEach((r, i) => {
    const key = r.set && SET_KEY.test(r.set) && !keys.has(r.set) ? r.set : `r${i}`;
    keys.add(key);
    if (r.channels) sources.push({ key, channels: r.channels });
    for (const gid of r.alarmgroup ?? []) {
      const g = byId.get(gid);
      if (groupsSeen.has(gid) || !g?.receiver.channels) continue;
      groupsSeen.add(gid);
      sources.push({ key: `g${gid}`, channels: g.receiver.channels });
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
    // Robots certain to be sent to: the first robot of each set so far (the others are fallbacks,
    // tried only when it fails, so a later set naming one of them still needs it).
    const primaries = new Set<string>();
    for (const s of sources) {
      // Robots are compared and queued sealed (a stable seal: the same robot, the same text); one
      // kept in plain from before is sealed here.
      const robots = (s.channels[channel] ?? []).map(sealRobot).filter((r) => !primaries.has(r.webhook));
      if (robots.length === 0) continue;
      primaries.add(robots[0].webhook);
      robotSets.push({ key: s.key, channel, robots });
    }
  }
  return { channels, robotSets };
}

/** Alarm group ids referenced by receivers (to load them in one batch). */
export function alarmGroupIds(receivers: ReceiverConfig[]): number[] {
  return [...new Set(receivers.flatMap((r) => r.alarmgroup ?? []))];
}

/**
 * The notification jobs of a message: one per user channel with people, `<prefix>:<channel>`, and
 * one per robot set, `<prefix>:<channel>:<set key>` (e.g. `:dinggroup:d0`, `:dinggroup:default`,
 * `:dinggroup:g7`). Ids are deterministic: a replayed producer makes the same ones, and the job
 * records de-duplicate on them. A user channel's job carries the answers of the schedules whose
 * people it sends to (`oncall`); a schedule with nobody on call gets a job of its own per channel,
 * `<prefix>:<channel>:s<schedule id>`, with nobody to send to, which records `skipped: nobody on call`.
 */
export function channelJobs(
  recipients: Recipients,
  base: Pick<NotificationJob, 'job_id' | 'task_id' | 'scene' | 'context' | 'claim'>,
): NotificationJob[] {
  const jobs: NotificationJob[] = [];
  const answers = recipients.oncall ?? [];
  for (const ch of USER_CHANNELS) {
    const users = recipients.channels[ch];
    const oncall = answers.filter((a) => a.uids.length > 0 && (a.channels as string[]).includes(ch));
    if (users?.length)
      jobs.push({
        kind: 'notify',
        ...base,
        job_id: `${base.job_id}:${ch}`,
        channel: ch,
        users,
        ...(oncall.length ? { oncall } : {}),
      });
  }
  for (const a of answers) {
    if (a.uids.length > 0) continue;
    for (const ch of a.channels) {
      const job_id = `${base.job_id}:${ch}:s${a.schedule_id}`;
      jobs.push({ kind: 'notify', ...base, job_id, channel: ch, users: [], oncall: [a] });
    }
  }
  // Robot sets come channel by channel (recipientsOf), each channel's in the order of its sets.
  for (const s of recipients.robotSets) {
    const job_id = `${base.job_id}:${s.channel}:${s.key}`;
    jobs.push({ kind: 'notify', ...base, job_id, channel: s.channel, robots: s.robots });
  }
  return jobs;
}
