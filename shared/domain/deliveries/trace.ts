import { recoveryDelaySeconds } from '../alarms/recovery.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { getAlarmRecord } from '../alarms/repository.ts';
import type { StoredMessage } from '../notifications/channel-message.ts';
import type { OncallAnswer } from '../schedules/model.ts';
import { type AttemptRecord, getJobsWithAttempts, type JobStatus } from '../notifications/repository.ts';
import type { Task } from '../tasks/model.ts';
import { ROBOT_CHANNELS, type ReceiverConfig, USER_CHANNELS } from '../../contracts/receivers.ts';
import { getTask } from '../tasks/repository.ts';
import { listAttemptsOfEvents, type WebhookAttempt } from '../webhooks/repository.ts';

/**
 * The deliveries of one alarm, for its decision trace: every webhook event and notification job the
 * alarm produced, with every attempt, and each notification's message as the channel sent it.
 *
 * Their ids are deterministic (alarms/effects.ts, notifications/receivers.ts): events
 * `<task>:<uuid>:ALARM|RECOVERY|UPGRADE:<strategy>`, jobs `<task>:<uuid>:<scene>[:<strategy>]:<channel>`
 * for people and `...:<channel>:<set>` for robots, the set being the receiver set the robots came from
 * (`default`, `override`, `d<i>` dispatch item i, `g<id>` alarm group, `r0` an upgrade's own receiver).
 * So they are read by key, no index: the events' own attempts (one Query each) plus one pass over the
 * task's delivery log around the time the alarm was processed (their settling first attempts), and
 * one BatchGetItem of the candidate job ids (scenes from the alarm record, sets from the task's
 * receivers as configured now) followed by one Query per job found. A robot set whose dispatch item
 * or alarm group was removed from the task since is not found; an event whose first attempt came
 * more than LOG_WINDOW_MS after the alarm (a queue backlog) shows only its later attempts.
 *
 * The message: each job record keeps the text its first run rendered (at most 2 KB, marked
 * `truncated` when cut), so the trace shows what was sent, not what today's template would render.
 */

/** How long after processing (or a delayed window's end) the delivery log is searched for first attempts. */
export const LOG_WINDOW_MS = 15 * 60_000;

export interface EventDeliveries {
  event_id: string;
  event: string;
  type: string;
  attempts: WebhookAttempt[];
}

export interface JobDeliveries {
  job_id: string;
  scene: string;
  channel: string;
  status: JobStatus;
  /** Who or what was addressed, masked as the attempts record it. */
  targets: string[];
  message?: StoredMessage;
  /** The schedules' answers its people came from (or, with nobody on call, that one's). */
  oncall?: OncallAnswer[];
  attempts: AttemptRecord[];
}

export interface AlarmDeliveries {
  webhooks: EventDeliveries[];
  notifications: JobDeliveries[];
}

const receiversOf = (task: Task | undefined, record: AlarmRecord | undefined): ReceiverConfig[] => [
  ...(task?.receiver ? [task.receiver] : []),
  ...(task?.receiver?.dispatch ?? []).map((d) => d.receiver),
  ...(task?.upgrade?.strategies ?? []).flatMap((s) => (s.receiver ? [s.receiver] : [])),
  ...(record?.receiver ? [record.receiver] : []),
];

/** The ids an alarm's events and jobs may have (pure). */
export function candidateIds(
  taskId: number,
  uuid: string,
  record: AlarmRecord | undefined,
  task: Task | undefined,
): { eventIds: string[]; jobIds: string[] } {
  const base = `${taskId}:${uuid}`;
  // Without a record (a task that stores nothing): its alarm or recovery notice.
  const events = record ? [record.outcome === 'recovery' ? 'RECOVERY' : 'ALARM'] : ['ALARM', 'RECOVERY'];
  const scenes = record
    ? [
        record.outcome === 'recovery'
          ? 'recovery'
          : record.outcome === 'compressed'
            ? 'compressed'
            : 'not_compress',
      ]
    : ['not_compress', 'recovery'];
  // A compressed alarm that was its metric's last before a quiet spell is recovered by the delay
  // recovery, which notifies with its uuid.
  if (record?.outcome === 'compressed' && task && recoveryDelaySeconds(task) !== undefined) {
    events.push('RECOVERY');
    scenes.push('recovery');
  }
  for (const fire of record?.upgrades ?? []) {
    events.push(`UPGRADE:${fire.key}`);
    scenes.push(`upgrade:${fire.key}`);
  }
  const dispatched = Math.max(
    task?.receiver?.dispatch?.length ?? 0,
    ...(record?.selection?.dispatch ?? []).map((i) => i + 1),
  );
  const groups = new Set(receiversOf(task, record).flatMap((r) => r.alarmgroup ?? []));
  const schedules = new Set(
    receiversOf(task, record).flatMap((r) => (r.oncall ?? []).map((o) => o.schedule_id)),
  );
  const sets = [
    'default',
    'override',
    'r0',
    ...Array.from({ length: dispatched }, (_, i) => `d${i}`),
    ...[...groups].map((g) => `g${g}`),
  ];
  const jobIds = scenes.flatMap((scene) => [
    ...USER_CHANNELS.map((ch) => `${base}:${scene}:${ch}`),
    ...ROBOT_CHANNELS.flatMap((ch) => sets.map((set) => `${base}:${scene}:${ch}:${set}`)),
    // A schedule with nobody on call: its own job per channel (notifications/receivers.ts).
    ...[...schedules].flatMap((id) => USER_CHANNELS.map((ch) => `${base}:${scene}:${ch}:s${id}`)),
  ]);
  return { eventIds: events.map((e) => `${base}:${e}`), jobIds };
}

export interface TraceDeps {
  getAlarmRecord: typeof getAlarmRecord;
  getTask: (id: number) => Promise<Task | undefined>;
  attemptsOfEvents: typeof listAttemptsOfEvents;
  jobs: typeof getJobsWithAttempts;
}

export const traceDeps: TraceDeps = {
  getAlarmRecord,
  getTask,
  attemptsOfEvents: listAttemptsOfEvents,
  jobs: getJobsWithAttempts,
};

/**
 * Every webhook event and notification job of one alarm of a task, with every attempt (oldest
 * first). `processedAt` (Unix seconds) is when the pipeline processed it (the record's `processed_at`);
 * a caller that holds the record and the task passes them to save their reads.
 */
export async function deliveriesOfAlarm(
  taskId: number,
  uuid: string,
  processedAt: number,
  known: { record?: AlarmRecord; task?: Task } = {},
  deps: TraceDeps = traceDeps,
): Promise<AlarmDeliveries> {
  const [record, task] = await Promise.all([
    known.record ?? deps.getAlarmRecord(taskId, uuid),
    known.task ?? deps.getTask(taskId),
  ]);
  const { eventIds, jobIds } = candidateIds(taskId, uuid, record, task);
  // A delayed window notifies its first alarm when the window ends.
  const windowEnd = (record as { window?: { end?: number } } | undefined)?.window?.end;
  const delay = record?.outcome === 'compressed' && task ? (recoveryDelaySeconds(task) ?? 0) : 0;
  const notifiedAt = Math.max(
    record?.notify === 'deferred' && windowEnd ? Math.max(windowEnd, processedAt) : processedAt,
    processedAt + delay,
  );
  const window = {
    taskId,
    fromMs: processedAt * 1000 - 60_000,
    toMs: notifiedAt * 1000 + LOG_WINDOW_MS,
  };
  const [events, jobs] = await Promise.all([deps.attemptsOfEvents(eventIds, window), deps.jobs(jobIds)]);
  return {
    webhooks: eventIds.flatMap((id) => {
      const attempts = events.get(id) ?? [];
      if (attempts.length === 0) return [];
      return [{ event_id: id, event: attempts[0].event, type: attempts[0].type, attempts }];
    }),
    notifications: jobs.map((j) => ({
      job_id: j.job_id,
      scene: j.scene,
      channel: j.channel,
      status: j.status,
      targets: [...new Set(j.attempts.map((a) => a.target))],
      ...(j.message ? { message: j.message } : {}),
      ...(j.oncall ? { oncall: j.oncall } : {}),
      attempts: j.attempts,
    })),
  };
}

/** What one target's latest attempt came to (a job or event without an attempt yet is `pending`). */
export type TargetOutcome = 'delivered' | 'failed' | 'skipped' | 'pending';

/**
 * What the deliveries of a channel (or of the whole alarm) add up to: `delivered` when every target
 * got it, `partly delivered` when some did and others failed or were skipped, `failed` when none did
 * and at least one failed, `skipped` when every target was skipped (no provider configured, no
 * address, nobody to notify), `pending` while nothing is settled, `none` when nothing was recorded.
 */
export type DeliveryResult = 'delivered' | 'partly delivered' | 'failed' | 'skipped' | 'pending' | 'none';

/** Why targets were skipped or failed: the distinct reasons of their latest attempts. */
export type DeliveryReasons = Partial<Record<'failed' | 'skipped', string[]>>;

export interface ChannelDelivery extends Record<TargetOutcome, number> {
  /** A notification channel (`email`, `dinggroup`, ...) or `webhook` for the task's webhook events. */
  channel: string;
  result: DeliveryResult;
  reasons?: DeliveryReasons;
}

/**
 * Whether the alarm reached a person: `notified` when at least one notification (any channel but the
 * webhook, which reaches a system) was delivered to, or accepted by, its provider; `not notified yet`
 * while none was and some still wait their turn; `nobody reached` otherwise (every notification
 * skipped or failed, or none sent).
 */
export type Reach = 'notified' | 'not notified yet' | 'nobody reached';

export interface DeliverySummary {
  result: DeliveryResult;
  reach: Reach;
  /** Per channel, in the order the trace lists them (`email delivered, webhook failed (HTTP 503)`). */
  text: string;
  channels: ChannelDelivery[];
}

/**
 * A notification attempt's outcome for its target: throttled and rate-limited targets wait for their
 * turn (pending); a refusal or a failure is `failed` (a failed one may still be retried).
 */
const NOTIFY_OUTCOME: Record<string, TargetOutcome> = {
  delivered: 'delivered',
  skipped: 'skipped',
  rejected: 'failed',
  failed: 'failed',
  throttled: 'pending',
  rate_limited: 'pending',
};
const WEBHOOK_OUTCOME: Record<string, TargetOutcome> = {
  delivered: 'delivered',
  skipped: 'skipped',
  refused: 'failed',
  failed: 'failed',
};
const JOB_STATUS_OUTCOME: Record<JobStatus, TargetOutcome> = {
  pending: 'pending',
  delivered: 'delivered',
  rejected: 'failed',
  skipped: 'skipped',
};

function resultOf(n: Record<TargetOutcome, number>): DeliveryResult {
  if (n.delivered > 0) return n.failed + n.skipped + n.pending > 0 ? 'partly delivered' : 'delivered';
  if (n.failed > 0) return 'failed';
  if (n.pending > 0) return 'pending';
  return n.skipped > 0 ? 'skipped' : 'none';
}

/** Words for the reason codes of skipped notifications (other codes are shown as recorded). */
const SKIP_REASONS: Record<string, string> = {
  not_configured: 'not configured',
  no_receiver: 'nobody to notify',
  unknown_user: 'unknown user',
  no_email: 'no e-mail address',
  no_phone: 'no phone number',
  no_account: 'no account',
};
/** At most this many reasons per outcome of a channel are kept, each cut to REASON_CHARS. */
const MAX_REASONS = 2;
const REASON_CHARS = 60;

const notifyReason = (a: AttemptRecord) =>
  a.outcome === 'skipped' ? (SKIP_REASONS[a.code] ?? a.detail ?? a.code) : a.detail || a.code;
const webhookReason = (a: WebhookAttempt) => (a.status ? `HTTP ${a.status}` : a.error);

function channelText(c: ChannelDelivery): string {
  const parts = (['delivered', 'failed', 'skipped', 'pending'] as const).filter((o) => c[o] > 0);
  const why = (o: (typeof parts)[number]) => {
    const r = o === 'failed' || o === 'skipped' ? c.reasons?.[o] : undefined;
    return r?.length ? ` (${r.join('; ')})` : '';
  };
  if (parts.length === 1 && (c[parts[0]] === 1 || !why(parts[0])))
    return `${c.channel} ${parts[0]}${c[parts[0]] > 1 ? ` (${c[parts[0]]})` : ''}${why(parts[0])}`;
  return `${c.channel} ${parts.map((o) => `${c[o]} ${o}${why(o)}`).join(', ')}`;
}

function reachOf(channels: ChannelDelivery[]): Reach {
  const people = channels.filter((c) => c.channel !== 'webhook');
  if (people.some((c) => c.delivered > 0)) return 'notified';
  return people.some((c) => c.pending > 0) ? 'not notified yet' : 'nobody reached';
}

/**
 * What an alarm's deliveries came to, per channel (pure): each target counts once, by its latest
 * attempt (a notification job's targets by their attempts, a webhook event as one target), with the
 * reasons of those skipped or failed. The decision trace states it beside the pipeline's decision,
 * so an alarm sent to its receivers never reads as notified when nobody was reached.
 */
export function summarizeDeliveries(d: AlarmDeliveries): DeliverySummary {
  const counts = new Map<string, Record<TargetOutcome, number> & { reasons: DeliveryReasons }>();
  const add = (channel: string, outcome: TargetOutcome, reason?: string) => {
    const c = counts.get(channel) ?? { delivered: 0, failed: 0, skipped: 0, pending: 0, reasons: {} };
    c[outcome]++;
    if (reason && (outcome === 'failed' || outcome === 'skipped')) {
      const list = c.reasons[outcome] ?? [];
      c.reasons[outcome] = list;
      const text = reason.length > REASON_CHARS ? `${reason.slice(0, REASON_CHARS - 1)}…` : reason;
      if (!list.includes(text) && list.length < MAX_REASONS) list.push(text);
    }
    counts.set(channel, c);
  };
  for (const job of d.notifications) {
    const latest = new Map<string, AttemptRecord>();
    for (const a of job.attempts) {
      const prev = latest.get(a.target);
      if (!prev || a.at_ms > prev.at_ms || (a.at_ms === prev.at_ms && a.seq > prev.seq))
        latest.set(a.target, a);
    }
    if (latest.size === 0) add(job.channel, JOB_STATUS_OUTCOME[job.status] ?? 'pending');
    for (const a of latest.values()) add(job.channel, NOTIFY_OUTCOME[a.outcome] ?? 'failed', notifyReason(a));
  }
  for (const event of d.webhooks) {
    const last = event.attempts.reduce<WebhookAttempt | undefined>(
      (l, a) => (!l || a.at_ms > l.at_ms || (a.at_ms === l.at_ms && a.attempt > l.attempt) ? a : l),
      undefined,
    );
    if (!last) add('webhook', 'pending');
    else add('webhook', WEBHOOK_OUTCOME[last.outcome] ?? 'failed', webhookReason(last));
  }
  const channels: ChannelDelivery[] = [...counts].map(([channel, { reasons, ...n }]) => ({
    channel,
    result: resultOf(n),
    ...n,
    ...(reasons.failed || reasons.skipped ? { reasons } : {}),
  }));
  const total = { delivered: 0, failed: 0, skipped: 0, pending: 0 };
  for (const c of channels) for (const o of Object.keys(total) as TargetOutcome[]) total[o] += c[o];
  return {
    result: resultOf(total),
    reach: reachOf(channels),
    text: channels.length ? channels.map(channelText).join(', ') : 'no delivery recorded',
    channels,
  };
}
