import { contentId, packLog, putItems, SCHEMA_VERSION, unpackLog } from '../../db/client.ts';
import { keys, webhookLogDayOf } from '../../db/keys.ts';
import type { NotifyScene } from '../../contracts/messages.ts';
import type { OncallAnswer } from '../../contracts/oncall.ts';
import { dayLogItems } from '../day-log.ts';
import type { NotifyChannel } from '../tasks/templates.ts';
import type { StoredMessage } from './channel-message.ts';
import {
  ATTEMPT_TTL_DAYS,
  type AttemptRecord,
  type JobRun,
  type JobStatus,
  type NotifyOutcome,
} from './repository.ts';

/**
 * A task's notification log (KEY-DESIGN AP-N9, AP-N10): the first runs of a consumer batch that
 * settled their jobs (delivered, refused, skipped) as one item per task, `NLOG#<task id>#<UTC day>`,
 * like the webhook delivery log. Every other run (a retry, a run left pending, a replay, a fan-out of
 * more than 100 targets) keeps its job item (`NJOB#`, repository.ts). One item per task per batch
 * instead of one job item per run: a job item with its index entry and its rendered message cost
 * about three write units; a batch's runs of one task compress into one or two.
 */

/** An attempt as stored: [target, outcome, code, detail, duration ms, at ms - the item's base_ms]. */
type LoggedAttempt = [string, NotifyOutcome, string, string | null, number, number];
/**
 * A run as stored: [job id, channel, scene, status, message, attempts], and the answers of the
 * schedules its people came from when it has them.
 */
type LoggedEntry =
  | [string, NotifyChannel, NotifyScene, JobStatus, StoredMessage | null, LoggedAttempt[]]
  | [string, NotifyChannel, NotifyScene, JobStatus, StoredMessage | null, LoggedAttempt[], OncallAnswer[]];

/** Days the log reaches back: its items' lifetime. */
const LOG_DAYS = ATTEMPT_TTL_DAYS;

/** A settled first run of a job, as the log keeps it. */
export interface LoggedRun {
  job_id: string;
  task_id: number;
  channel: NotifyChannel;
  scene: NotifyScene;
  status: JobStatus;
  message?: StoredMessage;
  /** The schedules' answers the job's people came from. */
  oncall?: OncallAnswer[];
  attempts: AttemptRecord[];
}

/** Whether a run belongs in the log rather than in its job item (repository.recordJobRun). */
export const loggable = (run: JobRun, attempt: number, replay: boolean) =>
  attempt === 1 && !replay && run.status !== 'pending' && run.attempts.length <= MAX_LOGGED_ATTEMPTS;
/** A run addressing more targets keeps its job item (which spills attempts into items of their own). */
const MAX_LOGGED_ATTEMPTS = 100;

/** AP-N9 (write): the items of a batch's settled first runs, one per task (one BatchWriteItem). */
export function notifyLogItems(runs: JobRun[]): Record<string, unknown>[] {
  const byTask = new Map<number, JobRun[]>();
  for (const r of runs) byTask.set(r.task_id, [...(byTask.get(r.task_id) ?? []), r]);
  return [...byTask.values()].map((log) => {
    const base = Math.min(...log.map((r) => Math.min(r.at_ms, ...r.attempts.map((a) => a.at_ms))));
    const entries: LoggedEntry[] = log.map((r) => {
      const attempts = r.attempts.map(
        (a): LoggedAttempt => [a.target, a.outcome, a.code, a.detail ?? null, a.duration_ms, a.at_ms - base],
      );
      const entry = [r.job_id, r.channel, r.scene, r.status, r.message ?? null, attempts] as const;
      return r.oncall ? [...entry, r.oncall] : [...entry];
    });
    return {
      ...keys.notifyLog(log[0].task_id, base, contentId(log.map((r) => r.job_id))),
      entity: 'notify_log',
      schema_version: SCHEMA_VERSION,
      task_id: log[0].task_id,
      base_ms: base,
      ...packLog(entries),
      ttl: Math.floor(base / 1000) + ATTEMPT_TTL_DAYS * 86_400,
    };
  });
}

/** AP-N9 (write): records a batch's settled first runs (one BatchWriteItem for every task's item). */
export async function putNotifyLogs(runs: JobRun[]): Promise<void> {
  const items = notifyLogItems(runs);
  if (items.length > 0) await putItems(items, 'notification log');
}

/** The runs a log item holds, each attempt as the job item would hold it (attempt 1, in order). */
export function runsOfLogItem(item: Record<string, unknown>): LoggedRun[] {
  const taskId = item.task_id as number;
  const base = item.base_ms as number;
  const ttl = item.ttl as number;
  return unpackLog<LoggedEntry>(item).map(([jobId, channel, scene, status, message, attempts, oncall]) => ({
    job_id: jobId,
    task_id: taskId,
    channel,
    scene,
    status,
    ...(message ? { message } : {}),
    ...(oncall ? { oncall } : {}),
    attempts: attempts.map(([target, outcome, code, detail, duration, at], seq) => ({
      job_id: jobId,
      task_id: taskId,
      channel,
      scene,
      target,
      outcome,
      code,
      ...(detail !== null ? { detail } : {}),
      attempt: 1,
      duration_ms: duration,
      at: Math.floor((base + at) / 1000),
      at_ms: base + at,
      seq,
      ttl,
    })),
  }));
}

const notifyLogDay = (taskId: number, day: number, opts: Parameters<typeof dayLogItems>[1]) =>
  dayLogItems(keys.notifyLogDay(taskId, day), opts);

/**
 * AP-N10: the logged runs of `jobIds` (or of every job, without it) in a task's log from `fromMs` to
 * `toMs`: one Query per UTC day of the window (at most the 30 days the log keeps). For an alarm's
 * trace, and for a job received again or replayed, whose first run may be here.
 */
export async function findLoggedRuns(
  taskId: number,
  fromMs: number,
  toMs: number,
  jobIds?: string[],
): Promise<Map<string, LoggedRun>> {
  const wanted = jobIds ? new Set(jobIds) : undefined;
  const found = new Map<string, LoggedRun>();
  const last = webhookLogDayOf(toMs);
  const range = { from: keys.dayLogSkFrom(fromMs), to: keys.dayLogSkFrom(toMs + 1) };
  for (let day = Math.max(webhookLogDayOf(fromMs), last - LOG_DAYS); day <= last; day++) {
    for await (const item of notifyLogDay(taskId, day, { range })) {
      for (const run of runsOfLogItem(item))
        if (!wanted || wanted.has(run.job_id)) found.set(run.job_id, run);
    }
  }
  return found;
}

/** A position in a task's notification log: a log item (day, sort key) and its attempts read. */
export interface NotifyLogPosition {
  day: number;
  sk: string;
  read: number;
}

/**
 * AP-N9 (read): a task's logged attempts page by page, newest item first (an item's attempts newest
 * first), from just after `after`: the day's items descending (`sk <= after.sk` on its day), day by
 * day back to the oldest day the log keeps, until `limit` attempts.
 */
export async function pageNotifyLogOfTask(
  taskId: number,
  limit: number,
  nowMs: number,
  after?: NotifyLogPosition,
): Promise<{
  rows: { attempt: AttemptRecord; orderMs: number; after: NotifyLogPosition }[];
  done: boolean;
}> {
  const rows: { attempt: AttemptRecord; orderMs: number; after: NotifyLogPosition }[] = [];
  const today = webhookLogDayOf(nowMs);
  for (let day = Math.min(after?.day ?? today, today); day > today - LOG_DAYS; day--) {
    const resume = after && after.day === day ? after : undefined;
    const range = resume ? { to: resume.sk } : undefined;
    for await (const item of notifyLogDay(taskId, day, { descending: true, range, pageSize: limit })) {
      const sk = item.sk as string;
      const attempts = runsOfLogItem(item)
        .flatMap((r) => r.attempts)
        .sort((a, b) => b.at_ms - a.at_ms || b.seq - a.seq);
      const from = resume && sk === resume.sk ? resume.read : 0;
      for (let i = from; i < attempts.length; i++) {
        rows.push({
          attempt: attempts[i],
          orderMs: Number(sk.slice(0, 13)),
          after: { day, sk, read: i + 1 },
        });
        if (rows.length >= limit) return { rows, done: false };
      }
    }
  }
  return { rows, done: true };
}
