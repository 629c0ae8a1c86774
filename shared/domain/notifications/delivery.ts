import { isObject, parseJson } from '../../json.ts';
import { performance } from 'node:perf_hooks';
import { nowMs, nowSeconds } from '../../clock.ts';
import { assertNotifySecretsLoaded, type Config, config } from '../../config/env.ts';
import { logDelivery, logger } from '../../log.ts';
import { count } from '../../metrics.ts';
import type { NotificationJob } from '../../contracts/messages.ts';
import { publish } from '../../messaging/sqs.ts';
import { delayedRetry, notDueFor, retryDelaySeconds, stillWaiting } from '../../messaging/retry.ts';
import { queueRetries, type RetryQueues } from '../../messaging/retry-queues.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import type { Template, User } from '../directory/model.ts';
import { getTemplate, getUsers } from '../directory/repository.ts';
import type { Task } from '../tasks/model.ts';
import { ROBOT_CHANNELS, type RobotChannel, USER_CHANNELS } from '../../contracts/receivers.ts';
import { openRobot } from '../channels/robots.ts';
import { dingWorker, wechatWorker, type WorkNoticeProvider, yachWorker } from './providers/work-notice.ts';
import { type Mailer, sesMailer, smtpMailer } from './providers/email.ts';
import { sendToRobot } from './providers/robot.ts';
import { maskRobot } from '../channels/redact.ts';
import { snsSms, type TextSender } from './providers/sms.ts';
import { maskEmail, maskPhone, type SendOutcome } from './providers/types.ts';
import { pinpointVoice } from './providers/voice.ts';
import { channelMessage, type StoredMessage, storedMessage } from './channel-message.ts';
import { buildRenderValues, plainText } from './render.ts';
import * as claimLinks from './claim-links.ts';
import {
  ATTEMPT_TTL_DAYS,
  type AttemptRecord,
  getJobState,
  type JobRun,
  type JobState,
  type JobStatus,
  recordJobRun,
} from './repository.ts';
import { NOTIFY_CHANNELS, NOTIFY_SCENES, resolveTemplate } from '../tasks/templates.ts';
import { type RobotThrottle, robotThrottle } from './throttle.ts';

/**
 * The notification consumer (API guide §9.7, §11): one queue message = one channel of one event.
 *
 * Per job: load the task (cached) and its template, render once, send through the channel's provider,
 * then record the run in one write (the job's state and every attempt). A message received again or
 * a producer's replay first reads the job's state: targets already served (a user's e-mail, the robot
 * group) are remembered, so a retry only sends what is left, and a finished job is not sent again.
 * Delivery is at least once: two copies of a job running at the very same moment could both send.
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
}

export interface BatchResult {
  batchItemFailures: { itemIdentifier: string }[];
}

export interface Providers {
  robotBase(channel: RobotChannel): string | undefined;
  workNotice(channel: 'dingworker' | 'yachworker' | 'wechat'): WorkNoticeProvider | undefined;
  mailer(): Mailer | undefined;
  sms(): TextSender | undefined;
  voice(): TextSender | undefined;
}

/** Its retries and dead letters: the notify queue and its dead-letter queue. */
export interface NotifyDeps extends RetryQueues<NotificationJob> {
  cfg: Pick<Config, 'envName' | 'timeZone' | 'notifyBackoffSeconds' | 'notify'> &
    Partial<Pick<Config, 'publicBaseUrl' | 'claimLink'>>;
  getTask(id: number): Promise<Task | undefined>;
  getTemplate(id: number): Promise<Template | undefined>;
  getUsers(uids: number[]): Promise<User[]>;
  getJobState(jobId: string): Promise<JobState | undefined>;
  recordJobRun(run: JobRun): Promise<void>;
  providers: Providers;
  throttle: RobotThrottle;
}

const SEND_CONCURRENCY = 5;

export async function deliverNotificationBatch(
  records: QueuedNotification[],
  deps: NotifyDeps = defaultNotifyDeps(),
): Promise<BatchResult> {
  const failures: string[] = [];
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
      let outcome: Awaited<ReturnType<typeof deliverNotification>>;
      try {
        outcome = await deliverNotification(r.body, r.receiveCount, deps);
      } catch (err) {
        logger.error('notification delivery failed', { messageId: r.messageId, error: err as Error });
        outcome = 'retry';
      }
      if (outcome === 'done') return;
      // A malformed message cannot succeed: the queue's redrive policy parks it.
      if (outcome === 'malformed' || !job) return void failures.push(r.messageId);
      const made = r.receiveCount + (job.attempts_before ?? 0);
      const next = { ...job, attempts_before: made };
      const wait = retryDelaySeconds(made, backoff);
      if (made > backoff.length) dead.push({ id: r.messageId, body: next });
      else again.push({ id: r.messageId, ...delayedRetry(next, wait) });
    }),
  );
  // What could not be queued comes back by the queue's visibility timeout instead (nothing lost).
  for (const x of await queueRetries('notification', again, dead, deps)) failures.push(x.id);
  return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
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
 * dead-letter queue numbers its attempts on from the runs made before (`attempts_before`).
 */
export async function deliverNotification(
  body: string,
  receiveCount: number,
  deps: NotifyDeps = defaultNotifyDeps(),
): Promise<'done' | 'retry' | 'malformed'> {
  const job = parseJob(body);
  if (!job) {
    logger.error('malformed notification job; left for the dead-letter queue', { length: body.length });
    return 'malformed';
  }
  const attempt = receiveCount + (job.attempts_before ?? 0);
  // A message received again, or a job a producer published again (a replay), may carry targets
  // served before: read what the job's earlier runs did. A fresh replay with no run recorded yet
  // may have its original still on the way: look again after the first backoff.
  let done = new Set<string>();
  if (attempt > 1 || job.replay) {
    const state = await deps.getJobState(job.job_id);
    if (state && state.status !== 'pending') return 'done';
    if (!state && job.replay && attempt <= 1) return 'retry';
    done = new Set(state?.done ?? []);
  }
  const run = new Run(job, attempt, done);
  try {
    const message = await render(job, deps);
    // The job record keeps what the channel sends (first run only: see recordJobRun).
    run.message = storedMessage(channelMessage(job.channel, claimLinks.withShownClaimLink(message)));
    await sendChannel(job, message, run, deps);
  } catch (err) {
    await persist(run, 'pending', deps).catch(() => undefined);
    throw err;
  }
  const status = run.status();
  await persist(run, status, deps);
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
  const last = attempt >= deps.cfg.notifyBackoffSeconds.length + 1;
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

/** The run's one write: the job's state and this run's attempts. */
async function persist(run: Run, status: JobStatus, deps: NotifyDeps) {
  await deps.recordJobRun({
    job_id: run.job.job_id,
    task_id: run.job.task_id,
    channel: run.job.channel,
    scene: run.job.scene,
    status,
    done: [...run.done],
    attempts: run.records,
    ...(run.message ? { message: run.message } : {}),
    ...(run.job.oncall ? { oncall: run.job.oncall } : {}),
    at_ms: nowMs(),
  });
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

/** The attempts of one delivery run and what they add up to. */
class Run {
  readonly records: AttemptRecord[] = [];
  /** The rendered message as the channel sends it. */
  message?: StoredMessage;
  private pending = false;
  private delivered = false;
  private rejected = false;

  constructor(
    readonly job: NotificationJob,
    readonly attempt: number,
    readonly done: Set<string>,
  ) {}

  /** Records an attempt and, unless `settle` is false, counts its outcome for the target `key`. */
  record(key: string | undefined, target: string, r: SendOutcome, durationMs = 0, settle = true) {
    const atMs = nowMs();
    this.records.push({
      job_id: this.job.job_id,
      task_id: this.job.task_id,
      channel: this.job.channel,
      scene: this.job.scene,
      target,
      outcome: r.outcome,
      code: r.code,
      ...(r.detail ? { detail: r.detail } : {}),
      attempt: this.attempt,
      duration_ms: Math.round(durationMs),
      at: Math.floor(atMs / 1000),
      at_ms: atMs,
      seq: this.records.length,
      ttl: Math.floor(atMs / 1000) + ATTEMPT_TTL_DAYS * 86_400,
    });
    count('ChannelDelivery', { channel: this.job.channel, outcome: r.outcome });
    if (settle) this.settle(key, r.outcome);
  }

  /** Counts a target's outcome: final ones mark it served, the others leave the job pending. */
  settle(key: string | undefined, outcome: SendOutcome['outcome']) {
    if (outcome === 'delivered') this.delivered = true;
    if (outcome === 'rejected') this.rejected = true;
    const final = outcome === 'delivered' || outcome === 'rejected' || outcome === 'skipped';
    if (key && final) this.done.add(key);
    if (!final) this.pending = true;
  }

  status(): JobStatus {
    if (this.pending) return 'pending';
    if (this.delivered) return 'delivered';
    return this.rejected ? 'rejected' : 'skipped';
  }
}

const notConfigured: SendOutcome = { outcome: 'skipped', code: 'not_configured', detail: 'not configured' };

async function timed(call: () => Promise<SendOutcome>): Promise<[SendOutcome, number]> {
  const t0 = performance.now();
  const r = await call();
  return [r, performance.now() - t0];
}

async function sendChannel(
  job: NotificationJob,
  m: claimLinks.LinkedMessage,
  run: Run,
  deps: NotifyDeps,
): Promise<void> {
  const channel = job.channel;
  if ((ROBOT_CHANNELS as readonly string[]).includes(channel)) {
    return sendRobots(channel as RobotChannel, job, m, run, deps);
  }
  if (!(USER_CHANNELS as readonly string[]).includes(channel)) return;
  const uids = [...new Set(job.users ?? [])];
  if (uids.length === 0) {
    run.record(
      undefined,
      'none',
      job.oncall?.length
        ? { outcome: 'skipped', code: 'nobody_on_call', detail: 'nobody on call' }
        : { outcome: 'skipped', code: 'no_receiver', detail: 'no users' },
    );
    return;
  }
  const users = new Map((await deps.getUsers(uids)).map((u) => [u.uid, u]));
  switch (channel) {
    case 'dingworker':
    case 'yachworker':
    case 'wechat':
      return sendWorkNotice(channel, uids, users, m, run, deps);
    case 'email': {
      const mailer = deps.providers.mailer();
      return perUser(
        uids,
        users,
        run,
        mailer,
        (u) => u.email,
        'no_email',
        maskEmail,
        async (to, uid) => mailer!.send(to, await claimLinks.withClaimLink(m, uid)),
      );
    }
    case 'sms': {
      const sms = deps.providers.sms();
      return perUser(
        uids,
        users,
        run,
        sms,
        (u) => u.phone,
        'no_phone',
        maskPhone,
        async (p, uid) => sms!.send(p, plainText(await claimLinks.withClaimLink(m, uid))),
      );
    }
    case 'phone': {
      const voice = deps.providers.voice();
      const text = plainText(m);
      return perUser(
        uids,
        users,
        run,
        voice,
        (u) => u.phone,
        'no_phone',
        maskPhone,
        (p) => voice!.send(p, text),
      );
    }
  }
}

async function sendRobots(
  channel: RobotChannel,
  job: NotificationJob,
  m: claimLinks.LinkedMessage,
  run: Run,
  deps: NotifyDeps,
) {
  const robots = job.robots ?? [];
  const base = deps.providers.robotBase(channel);
  const key = 'robots';
  if (run.done.has(key)) return;
  if (robots.length === 0) {
    run.record(key, 'none', { outcome: 'skipped', code: 'no_receiver', detail: 'no robots' });
    return;
  }
  if (!base) {
    run.record(key, robots.map((r) => maskRobot(openRobot(r).webhook)).join(', '), notConfigured);
    return;
  }
  // Robots are tried in order until one takes the message; each try is recorded, and the channel's
  // outcome is decided at the end: delivered, retried (some failure was transient) or refused.
  const cfg = deps.cfg.notify;
  // The group's link (uid 0): whoever claims with it signs in first.
  const sent = await claimLinks.withClaimLink(m, 0);
  let transient = false;
  for (const sealed of robots) {
    // Robots travel sealed: each is opened when it is tried, and only then.
    const robot = openRobot(sealed);
    const target = maskRobot(robot.webhook);
    if (!(await deps.throttle.take(channel, robot, nowSeconds()))) {
      transient = true;
      const r: SendOutcome = {
        outcome: 'throttled',
        code: 'throttled',
        detail: 'robot budget of this minute spent',
      };
      run.record(key, target, r, 0, false);
      continue;
    }
    const [r, ms] = await timed(() =>
      sendToRobot(base, robot, sent, { timeoutMs: cfg.httpTimeoutMs, linkUrl: cfg.linkUrl, nowMs: nowMs() }),
    );
    run.record(key, target, r, ms, false);
    if (r.outcome === 'delivered') {
      run.settle(key, 'delivered');
      return;
    }
    if (r.outcome === 'rate_limited') await deps.throttle.backOff(channel, robot, nowSeconds());
    if (r.outcome !== 'rejected') transient = true;
  }
  run.settle(key, transient ? 'failed' : 'rejected');
}

async function perUser(
  uids: number[],
  users: Map<number, User>,
  run: Run,
  provider: unknown,
  address: (u: User) => string,
  missingCode: string,
  mask: (a: string) => string,
  send: (address: string, uid: number) => Promise<SendOutcome>,
) {
  const todo = uids.filter((uid) => !run.done.has(`uid:${uid}`));
  if (todo.length === 0) return;
  if (!provider) {
    run.record(undefined, `uids ${todo.join(',')}`, notConfigured);
    for (const uid of todo) run.done.add(`uid:${uid}`);
    return;
  }
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const uid = todo[next++];
      const key = `uid:${uid}`;
      const user = users.get(uid);
      if (!user) {
        run.record(key, `uid ${uid}`, {
          outcome: 'skipped',
          code: 'unknown_user',
          detail: `user [${uid}] not found`,
        });
        continue;
      }
      const to = address(user).trim();
      if (!to) {
        run.record(key, `uid ${uid}`, {
          outcome: 'skipped',
          code: missingCode,
          detail: `user [${uid}] has none`,
        });
        continue;
      }
      const [r, ms] = await timed(() => send(to, uid));
      run.record(key, `uid ${uid} ${mask(to)}`, r, ms);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, todo.length) }, worker));
}

async function sendWorkNotice(
  channel: 'dingworker' | 'yachworker' | 'wechat',
  uids: number[],
  users: Map<number, User>,
  m: claimLinks.LinkedMessage,
  run: Run,
  deps: NotifyDeps,
) {
  const key = 'users';
  if (run.done.has(key)) return;
  const provider = deps.providers.workNotice(channel);
  if (!provider) {
    run.record(key, `uids ${uids.join(',')}`, notConfigured);
    return;
  }
  const recipients: string[] = [];
  const served: number[] = [];
  for (const uid of uids) {
    const u = users.get(uid);
    const account = (channel === 'wechat' ? u?.wechatid : u?.user)?.trim();
    if (!u || !account) {
      const code = u ? 'no_account' : 'unknown_user';
      run.record(undefined, `uid ${uid}`, {
        outcome: 'skipped',
        code,
        detail: `user [${uid}] has no ${channel} account`,
      });
      continue;
    }
    recipients.push(account);
    served.push(uid);
  }
  if (recipients.length === 0) {
    run.done.add(key);
    return;
  }
  if (!m.claimLink) {
    const [r, ms] = await timed(() => provider.send(recipients, m, run.job.job_id));
    return run.record(key, `uids ${served.join(',')}`, r, ms);
  }
  // Claim links: one call per person (`uid:<uid>`), each with its own message and message id.
  for (const [i, uid] of served.entries()) {
    if (run.done.has(`uid:${uid}`)) continue;
    const own = await claimLinks.withClaimLink(m, uid);
    const [r, ms] = await timed(() => provider.send([recipients[i]], own, `${run.job.job_id}:${uid}`));
    run.record(`uid:${uid}`, `uid ${uid}`, r, ms);
  }
}

// --- real adapters -------------------------------------------------------------------------------

const templateCache = new Map<number, { at: number; value: Promise<Template | undefined> }>();
const TEMPLATE_CACHE_MS = 30_000;

function cachedTemplate(id: number): Promise<Template | undefined> {
  const hit = templateCache.get(id);
  if (hit && nowMs() - hit.at < TEMPLATE_CACHE_MS) return hit.value;
  const value = getTemplate(id);
  templateCache.set(id, { at: nowMs(), value });
  value.catch(() => templateCache.delete(id));
  return value;
}

function lazy<T>(make: () => T | undefined): () => T | undefined {
  let made = false;
  let value: T | undefined;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}

export function realProviders(cfg: Config): Providers {
  const n = cfg.notify;
  const opts = { timeoutMs: n.httpTimeoutMs, linkUrl: n.linkUrl, nowMs };
  const ding = lazy(() => (n.dingworker ? dingWorker(n.dingworker, opts) : undefined));
  const yach = lazy(() => (n.yachworker ? yachWorker(n.yachworker, opts) : undefined));
  const wechat = lazy(() => (n.wechat ? wechatWorker(n.wechat, opts) : undefined));
  return {
    robotBase: (channel) => n.robots[channel],
    workNotice: (channel) =>
      channel === 'dingworker' ? ding() : channel === 'yachworker' ? yach() : wechat(),
    mailer: lazy(() =>
      n.email?.provider === 'smtp'
        ? smtpMailer(n.email, n.httpTimeoutMs)
        : n.email?.provider === 'ses'
          ? sesMailer(n.email, cfg.region)
          : undefined,
    ),
    sms: lazy(() => (n.sms ? snsSms(n.sms, cfg.region) : undefined)),
    voice: lazy(() => (n.phone ? pinpointVoice(n.phone, cfg.region) : undefined)),
  };
}

let defaults: NotifyDeps | undefined;

export function defaultNotifyDeps(): NotifyDeps {
  if (defaults) return defaults;
  assertNotifySecretsLoaded();
  const cfg = config();
  defaults = {
    cfg,
    getTask: (id) => getTaskCached(id),
    getTemplate: cachedTemplate,
    getUsers,
    getJobState,
    recordJobRun,
    providers: realProviders(cfg),
    throttle: robotThrottle({
      maxPerMinute: cfg.notify.robotMaxPerMinute,
      blockSeconds: cfg.notify.robotBlockSeconds,
    }),
    requeue: (messages) => publish('notify', messages),
    deadLetter: (jobs) =>
      publish(
        'notify-dlq',
        jobs.map((body) => ({ body })),
      ),
  };
  return defaults;
}
