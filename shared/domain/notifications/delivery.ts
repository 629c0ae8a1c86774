import { isObject, parseJson } from '../../json.ts';
import { nowMs } from '../../clock.ts';
import { logDelivery, logger } from '../../log.ts';
import { count } from '../../metrics.ts';
import type { NotificationJob } from '../../contracts/messages.ts';
import { delayedRetry, notDueFor, retryDelaySeconds, stillWaiting } from '../../messaging/retry.ts';
import { queueRetries } from '../../messaging/retry-queues.ts';
import type { User } from '../directory/model.ts';
import { NOTIFY_CHANNELS, NOTIFY_SCENES, resolveTemplate } from '../tasks/templates.ts';
import { channelMessage, storedMessage } from './channel-message.ts';
import { loggable } from './log.ts';
import { defaultNotifyDeps, type NotifyDeps } from './notify-deps.ts';
import { buildRenderValues } from './render.ts';
import * as claimLinks from './claim-links.ts';
import type { JobRun, JobStatus } from './repository.ts';
import { Run } from './run.ts';
import { sendChannel } from './send.ts';

export type { NotifyDeps, Providers } from './notify-deps.ts';

/**
 * The notification consumer (API guide §9.7, §11): one queue message = one channel of one event.
 *
 * Per job: load the task (cached) and its template, render once, send through the channel's provider
 * (send.ts). The bookkeeping: the first runs of a batch that settle their jobs (the common case) are
 * recorded together, one notification log item per task (log.ts); any other run (a failure left for
 * a retry, a retry, a replay) in its job's item, one write (the job's state and every attempt). A
 * message received again or a producer's replay first reads the job's state, and without one the
 * log: targets already served (a user's e-mail, the robot group) are remembered, so a retry only sends
 * what is left, and a finished job is not sent again. Delivery is at least once: two copies of a job
 * running at the very same moment could both send, and so could a copy of a job whose first run was
 * sent but not yet recorded when its consumer died.
 *
 * Outcomes: `delivered`; `rejected` (the provider refused for good: bad robot token, SMTP 5xx,
 * invalid number) and `skipped` (no provider configured, user without phone / e-mail / account) are
 * final and not retried; `failed` (no answer, 5xx, busy), `throttled` (our per-robot budget is
 * spent) and `rate_limited` (the robot's provider said "too fast") are retried: a new message delayed by
 * the backoff (never held in flight: an outage cannot fill the queue's in-flight room) with the runs
 * made (`attempts_before`); after the last retry the consumer puts the job in the notify DLQ itself.
 */
export interface QueuedNotification {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** ApproximateReceiveCount: with the job's `attempts_before`, the attempt number. */
  receiveCount: number;
  /** ApproximateFirstReceiveTimestamp (ms): its first run was made after it. */
  firstReceivedMs?: number;
}

export interface BatchResult {
  batchItemFailures: { itemIdentifier: string }[];
}

/** How the batch records a settled first run, and where a message's first run began. */
interface RunOptions {
  /** Takes a settled first run for the batch's log instead of its job item. */
  log?: (run: JobRun) => void;
  firstReceivedMs?: number;
}

export async function deliverNotificationBatch(
  records: QueuedNotification[],
  deps: NotifyDeps = defaultNotifyDeps(),
): Promise<BatchResult> {
  const failures: string[] = [];
  const settled: JobRun[] = [];
  const batchDeps = { ...deps, getUsers: usersOfBatch(records, deps) };
  // Retries go back as new messages delayed by their backoff (never held in flight); a job whose
  // retries are used up goes to the dead-letter queue.
  const again: { id: string; body: NotificationJob; delaySeconds: number }[] = [];
  const dead: { id: string; body: NotificationJob }[] = [];
  const backoff = deps.cfg.notifyBackoffSeconds;
  await Promise.all(
    records.map(async (r) => {
      const job = parseJob(r.body);
      // A chained retry received before it is due goes back with the rest of its delay, untried.
      if (job && notDueFor(job) > 0)
        return void again.push({ id: r.messageId, body: job, ...stillWaiting(job) });
      // Received again after its last attempt (SQS lost a delete, or the consumer died): its retries
      // are used up. To the dead-letter queue, unless a receive of it put it there already or a copy
      // settled it; when its state cannot be read, there (at least once). (A job redriven from the
      // dead-letter queue is a message received once, and gets its retries again.)
      const before = r.receiveCount - 1 + (job?.attempts_before ?? 0);
      if (job && r.receiveCount > 1 && ofBudget(job, before) > backoff.length) {
        const state = await deps.getJobState(job.job_id).catch((err) => {
          logger.warn('could not read a notification job', { jobId: job.job_id, error: err as Error });
          return undefined;
        });
        // (dead_after past its latest redrive: put there in this round of its retries)
        if (!state || (state.status === 'pending' && ofBudget(job, state.dead_after ?? 0) <= 0))
          dead.push({ id: r.messageId, body: { ...job, attempts_before: before } });
        return;
      }
      let outcome: Awaited<ReturnType<typeof deliverNotification>>;
      try {
        outcome = await deliverNotification(r.body, r.receiveCount, batchDeps, {
          log: (run) => settled.push(run),
          firstReceivedMs: r.firstReceivedMs,
        });
      } catch (err) {
        logger.error('notification delivery failed', { messageId: r.messageId, error: err as Error });
        outcome = 'retry';
      }
      if (outcome === 'done') return;
      // A malformed message cannot succeed: the queue's redrive policy parks it.
      if (outcome === 'malformed' || !job) return void failures.push(r.messageId);
      const made = r.receiveCount + (job.attempts_before ?? 0);
      const next = { ...job, attempts_before: made };
      const inBudget = ofBudget(job, made);
      if (inBudget > backoff.length) dead.push({ id: r.messageId, body: next });
      else again.push({ id: r.messageId, ...delayedRetry(next, retryDelaySeconds(inBudget, backoff)) });
    }),
  );
  const logged = settled.length > 0 ? logBestEffort(settled, deps) : undefined;
  // What could not be queued comes back by the queue's visibility timeout instead (nothing lost).
  for (const x of await queueRetries('notification', again, dead, deps)) failures.push(x.id);
  await logged;
  return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
}

/**
 * The users every job of a batch names, read in one BatchGetItem (on first use) rather than one per
 * job; each job takes its own from them.
 */
function usersOfBatch(records: QueuedNotification[], deps: NotifyDeps): NotifyDeps['getUsers'] {
  let all: Promise<Map<number, User>> | undefined;
  const uids = [...new Set(records.flatMap((r) => parseJob(r.body)?.users ?? []))];
  return async (wanted) => {
    all ??= deps.getUsers(uids).then((found) => new Map(found.map((u) => [u.uid, u])));
    const byUid = await all;
    return wanted.flatMap((uid) => byUid.get(uid) ?? []);
  };
}

/**
 * Writes the batch's settled first runs, three tries (100 ms, 400 ms apart). The messages are
 * acknowledged whatever comes of it: they were sent, and sending them again would notify people twice;
 * runs that could not be recorded are logged and counted with the alarm path's other lost log
 * entries (AlarmLogLost).
 */
async function logBestEffort(runs: JobRun[], deps: NotifyDeps): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.logRuns(runs);
      return;
    } catch (err) {
      if (attempt >= 2) {
        logger.error('notification runs not recorded (they were sent)', {
          jobIds: runs.map((r) => r.job_id),
          error: err as Error,
        });
        count('AlarmLogLost', {}, runs.length);
        return;
      }
      await new Promise((r) => setTimeout(r, 100 * 4 ** attempt));
    }
  }
}

/** The job in a queue message, or undefined when it is not one (left for the dead-letter queue). */
export function parseJob(body: string): NotificationJob | undefined {
  let j: unknown;
  try {
    j = parseJson(body);
  } catch {
    return undefined;
  }
  if (!isObject(j) || j.kind !== 'notify') return undefined;
  if (typeof j.job_id !== 'string' || j.job_id.length === 0 || j.job_id.length > 400) return undefined;
  if (typeof j.task_id !== 'number' || !Number.isSafeInteger(j.task_id)) return undefined;
  if (!NOTIFY_SCENES.includes(j.scene as never) || !NOTIFY_CHANNELS.includes(j.channel as never))
    return undefined;
  if (!isObject(j.context) || !isObject(j.context.task)) return undefined;
  if (j.users !== undefined && !(Array.isArray(j.users) && j.users.every((u) => Number.isSafeInteger(u)))) {
    return undefined;
  }
  if (
    j.attempts_before !== undefined &&
    !(Number.isSafeInteger(j.attempts_before) && (j.attempts_before as number) >= 0)
  ) {
    return undefined;
  }
  if (
    j.redriven_after !== undefined &&
    !(Number.isSafeInteger(j.redriven_after) && (j.redriven_after as number) >= 0)
  ) {
    return undefined;
  }
  if (j.replay_since_ms !== undefined && !Number.isSafeInteger(j.replay_since_ms)) return undefined;
  if (
    j.robots !== undefined &&
    !(Array.isArray(j.robots) && j.robots.every((r) => isObject(r) && typeof r.webhook === 'string'))
  ) {
    return undefined;
  }
  if (j.claim !== undefined && !claimLinks.isClaimTarget(j.claim)) return undefined;
  if (j.oncall !== undefined && !(Array.isArray(j.oncall) && j.oncall.every(isObject))) return undefined;
  return j as unknown as NotificationJob;
}

/**
 * Delivers one job; 'retry' when something is left to send later, 'malformed' when it is not a job.
 * `receiveCount` is the queue's receive count of the message; a job an operator redrove from the
 * dead-letter queue numbers its attempts on from those made before (`attempts_before`) and gets its
 * retries again (`redriven_after`). A settled
 * first run goes to `opts.log` when given (the batch's notification log), else to its job item.
 */
export async function deliverNotification(
  body: string,
  receiveCount: number,
  deps: NotifyDeps = defaultNotifyDeps(),
  opts: RunOptions = {},
): Promise<'done' | 'retry' | 'malformed'> {
  const job = parseJob(body);
  if (!job) {
    logger.error('malformed notification job; left for the dead-letter queue', { length: body.length });
    return 'malformed';
  }
  const attempt = receiveCount + (job.attempts_before ?? 0);
  const replay = job.replay === true;
  // A message received again, or a job a producer published again (a replay), may carry targets
  // served before: read what the job's earlier runs did (its item; a first run that settled it is in
  // the task's log). A fresh replay with no run recorded yet may have its original still on the way:
  // look again after the first backoff.
  let done = new Set<string>();
  if (attempt > 1 || replay) {
    const state = await deps.getJobState(job.job_id);
    if (state && state.status !== 'pending') return 'done';
    // A copy of this message (the queue delivered it twice) made this attempt already, and queued the
    // next one: nothing more to do here.
    if (state && !replay && (state.last_attempt ?? 0) >= attempt) return 'done';
    if (!state) {
      const since = job.replay_since_ms ?? (opts.firstReceivedMs ?? nowMs() - LOG_LOOKBACK_MS) - 1000;
      if (await deps.loggedRun(job.task_id, job.job_id, since)) return 'done';
      if (replay && attempt <= 1) return 'retry';
    }
    done = new Set(state?.done ?? []);
  }
  const run = new Run(job, attempt, done);
  try {
    const message = await render(job, deps);
    // The record keeps what the channel sends (first run only: see recordJobRun), its claim link
    // shown without a token.
    run.message = storedMessage(channelMessage(job.channel, claimLinks.withShownClaimLink(message)));
    await sendChannel(job, message, run, deps);
  } catch (err) {
    await deps.recordJobRun(runOf(run, 'pending')).catch(() => undefined);
    throw err;
  }
  const status = run.status();
  const record = runOf(run, status);
  if (opts.log && loggable(record, attempt, replay)) opts.log(record);
  else await deps.recordJobRun(record);
  // Codes and masked targets only: never a token, secret or address in the logs.
  for (const r of run.records)
    logDelivery({
      channel: job.channel,
      target: r.target,
      outcome: r.outcome,
      code: r.code,
      id: job.job_id,
      attempt,
    });
  // A refusal, or the last attempt of a job still not delivered: an operator's business.
  const last = ofBudget(job, attempt) >= deps.cfg.notifyBackoffSeconds.length + 1;
  if (status === 'rejected' || (status !== 'delivered' && last)) {
    logger.warn('notification not delivered', {
      job_id: job.job_id,
      channel: job.channel,
      status,
      attempt,
      outcomes: run.records.map((r) => `${r.outcome}:${r.code}`),
    });
  }
  return status === 'pending' ? 'retry' : 'done';
}

/** An attempt's number within the job's retry budget: a job redriven from the dead-letter queue starts it again. */
const ofBudget = (job: NotificationJob, attempt: number) => attempt - (job.redriven_after ?? 0);

/** How far back a message received again without its first receive time looks in the log. */
const LOG_LOOKBACK_MS = 15 * 60_000;

/** A run as it is recorded: the job's state and this run's attempts. */
function runOf(run: Run, status: JobStatus): JobRun {
  return {
    job_id: run.job.job_id,
    task_id: run.job.task_id,
    channel: run.job.channel,
    scene: run.job.scene,
    status,
    done: [...run.done],
    attempts: run.records,
    ...(run.message ? { message: run.message } : {}),
    ...(run.job.oncall ? { oncall: run.job.oncall } : {}),
    attempt: run.attempt,
    at_ms: nowMs(),
  };
}

async function render(job: NotificationJob, deps: NotifyDeps): Promise<claimLinks.LinkedMessage> {
  const task = await deps.getTask(job.task_id);
  const templateId = task?.template?.template_id;
  const predefined = templateId ? await deps.getTemplate(templateId) : undefined;
  const values = buildRenderValues(job.context, task, { env: deps.cfg.envName, timeZone: deps.cfg.timeZone });
  return claimLinks.render(job, deps.cfg, values, (opts) =>
    resolveTemplate(task?.template, predefined, job.scene, job.channel, opts),
  );
}
