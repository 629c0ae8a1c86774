import type { TaskConfig } from './model.ts';
import type { Channels, ReceiverConfig } from '../../contracts/receivers.ts';
import { uniq } from './normalize.ts';

/**
 * Every receiver in use, with the path it sits at: the task's, its dispatch items', and those of
 * enabled reminders and upgrades.
 */
export function receiverPaths(c: TaskConfig): { path: string; receiver: ReceiverConfig }[] {
  const out = [{ path: 'receiver', receiver: c.receiver }];
  (c.receiver.dispatch ?? []).forEach((d, i) => {
    out.push({ path: `receiver.dispatch.${i}.receiver`, receiver: d.receiver });
  });
  if (c.workflow.enable)
    (c.workflow.reminds ?? []).forEach((r, i) => {
      if (r.receiver) out.push({ path: `workflow.reminds.${i}.receiver`, receiver: r.receiver });
    });
  if (c.upgrade.enable)
    (c.upgrade.strategies ?? []).forEach((s, i) => {
      if (s.receiver) out.push({ path: `upgrade.strategies.${i}.receiver`, receiver: s.receiver });
    });
  return out;
}

/** Every receiver in use (receiverPaths without the paths). */
export function receiversInUse(c: TaskConfig): ReceiverConfig[] {
  return receiverPaths(c).map((r) => r.receiver);
}

export function referencedGroupIds(c: TaskConfig): number[] {
  return uniq(receiversInUse(c).flatMap((r) => r.alarmgroup ?? []));
}

/** The schedules whose on-call people the configuration's receivers page (its reference index entries). */
export function referencedScheduleIds(c: Pick<TaskConfig, 'receiver' | 'workflow' | 'upgrade'>): number[] {
  return uniq(
    receiversInUse(c as TaskConfig).flatMap((r) => (r.oncall ?? []).map((o) => o.schedule_id)),
  ).sort((a, b) => a - b);
}

/**
 * Users placed in a phone or sms channel anywhere in the configuration, alarm-group members
 * included (they are messaged through the group just the same).
 */
export function phoneChannelUids(
  c: TaskConfig,
  groups: { id: number; receiver: { channels?: Channels } }[],
): number[] {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const uids: number[] = [];
  for (const r of receiversInUse(c)) {
    const sources = [r.channels, ...(r.alarmgroup ?? []).map((g) => byId.get(g)?.receiver.channels)];
    for (const ch of sources) uids.push(...(ch?.phone ?? []), ...(ch?.sms ?? []));
  }
  return uniq(uids);
}

export const webhookOf = (c: Pick<TaskConfig, 'receiver'>): string | undefined =>
  c.receiver.channels?.webhook;
