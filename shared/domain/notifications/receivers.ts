import type { NotificationJob, NotifyScene, RenderContext } from '../../messaging/messages.ts';
import type { AlarmGroup } from '../directory/model.ts';
import {
  type Channels,
  ROBOT_CHANNELS,
  type ReceiverConfig,
  type Robot,
  USER_CHANNELS,
} from '../tasks/model.ts';

/**
 * Merges receivers and their alarm groups into one channel list (behavior 7.6): users de-duplicated
 * by uid, robots by webhook; the webhook URL is the first one given.
 */
export function mergeReceivers(receivers: ReceiverConfig[], groups: AlarmGroup[]): Channels {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const sources: Channels[] = [];
  for (const r of receivers) {
    if (r.channels) sources.push(r.channels);
    for (const gid of r.alarmgroup ?? []) {
      const g = byId.get(gid);
      if (g?.receiver.channels) sources.push(g.receiver.channels);
    }
  }
  const out: Channels = {};
  for (const ch of USER_CHANNELS) {
    const uids = [...new Set(sources.flatMap((s) => s[ch] ?? []))];
    if (uids.length) out[ch] = uids;
  }
  for (const ch of ROBOT_CHANNELS) {
    const seen = new Set<string>();
    const robots: Robot[] = [];
    for (const r of sources.flatMap((s) => s[ch] ?? [])) {
      if (!seen.has(r.webhook)) {
        seen.add(r.webhook);
        robots.push(r);
      }
    }
    if (robots.length) out[ch] = robots;
  }
  const webhook = sources.find((s) => s.webhook)?.webhook;
  if (webhook) out.webhook = webhook;
  return out;
}

/** Alarm group ids referenced by receivers (to load them in one batch). */
export function alarmGroupIds(receivers: ReceiverConfig[]): number[] {
  return [...new Set(receivers.flatMap((r) => r.alarmgroup ?? []))];
}

/** One notification job per non-empty channel (the webhook channel is served by webhook events). */
export function channelJobs(
  channels: Channels,
  base: { job_id: string; task_id: number; scene: NotifyScene; context: RenderContext },
): NotificationJob[] {
  const jobs: NotificationJob[] = [];
  for (const ch of USER_CHANNELS) {
    const users = channels[ch];
    if (users?.length)
      jobs.push({ kind: 'notify', ...base, job_id: `${base.job_id}:${ch}`, channel: ch, users });
  }
  for (const ch of ROBOT_CHANNELS) {
    const robots = channels[ch];
    if (robots?.length)
      jobs.push({ kind: 'notify', ...base, job_id: `${base.job_id}:${ch}`, channel: ch, robots });
  }
  return jobs;
}
