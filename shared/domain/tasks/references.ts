import type { TaskConfig } from './model.ts';
import type { Channels, ReceiverConfig } from '../../contracts/receivers.ts';
import { uniq } from './normalize.ts';

/** Every receiver in use: the task's, its dispatch items', and those of enabled reminders and upgrades. */
export function receiversInUse(c: TaskConfig): ReceiverConfig[] {
  const out: ReceiverConfig[] = [c.receiver];
  for (const d of c.receiver.dispatch ?? []) out.push(d.receiver);
  if (c.workflow.enable) for (const r of c.workflow.reminds ?? []) if (r.receiver) out.push(r.receiver);
  if (c.upgrade.enable) for (const s of c.upgrade.strategies ?? []) if (s.receiver) out.push(s.receiver);
  return out;
}

export function referencedGroupIds(c: TaskConfig): number[] {
  return uniq(receiversInUse(c).flatMap((r) => r.alarmgroup ?? []));
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
