import type { WebhookBody } from '../../contracts/messages.ts';
import type { HistoryRecord } from '../alarms/history.ts';
import type { Person } from '../directory/model.ts';

/**
 * Builders of the outbound event payloads (API guide §12.3, §12.4). Every producer (task API,
 * pipeline, workflows) builds its events here so the shapes cannot drift.
 */
export const taskRef = (t: { id: number; name: string }) => ({ id: t.id, name: t.name });

export const historyRef = (h: HistoryRecord) => ({
  id: h.id,
  uuid: h.uuid,
  batch: h.batch,
  metric: h.metric,
  level: h.level,
  leve: h.level,
  ctn: h.ctn,
  notice_time: h.notice_time,
});

/** `msg` of the not_save_db types: the alarm without a stored record. */
export const msgRef = (a: {
  uuid: string;
  level: number;
  ctn: Record<string, unknown>;
  notice_time: number;
}) => ({
  uuid: a.uuid,
  level: a.level,
  leve: a.level,
  ctn: a.ctn,
  notice_time: a.notice_time,
});

export const workflowRef = (w: { id: number; status: number; created_at: number }) => ({
  id: w.id,
  status: w.status,
  created_at: w.created_at,
});

/** `link`: a claim made with a claim link, and the channel of the message that carried it. */
export const pipelineRef = (p: {
  remark: string;
  user: Person | null;
  assignto?: Person[];
  link?: { channel: string };
}) => ({
  remark: p.remark,
  user: p.user ? { uid: p.user.uid, username: p.user.username, user: p.user.user } : null,
  ...(p.assignto
    ? { assignto: p.assignto.map((u) => ({ uid: u.uid, username: u.username, user: u.user })) }
    : {}),
  ...(p.link ? { link: { channel: p.link.channel } } : {}),
});

/**
 * `data.order` of an event with an order key (API guide §12.6): the key (`wf:<workflow id>`,
 * `m:<metric>`) and the event's sequence number, which increases along the events of that key.
 */
export const orderRef = (key: string, seq: number) => ({ key, seq });

export function event(
  name: WebhookBody['event'],
  type: string,
  data: Record<string, unknown> = {},
): WebhookBody {
  return { event: name, type, data, extra: {} };
}

export const pingEvent = (): WebhookBody => event('PING', 'ping');
