import { nowMs } from '../../clock.ts';
import { assertNotifySecretsLoaded, type Config, config } from '../../config/env.ts';
import type { NotificationJob } from '../../contracts/messages.ts';
import type { RetryQueues } from '../../messaging/retry-queues.ts';
import { publish } from '../../messaging/sqs.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import type { Template, User } from '../directory/model.ts';
import { getTemplate, getUsers } from '../directory/repository.ts';
import type { Task } from '../tasks/model.ts';
import type { RobotChannel } from '../../contracts/receivers.ts';
import { dingWorker, wechatWorker, type WorkNoticeProvider, yachWorker } from './providers/work-notice.ts';
import { type Mailer, sesMailer, smtpMailer } from './providers/email.ts';
import { snsSms, type TextSender } from './providers/sms.ts';
import { pinpointVoice } from './providers/voice.ts';
import { findLoggedRuns, type LoggedRun, putNotifyLogs } from './log.ts';
import { getJobState, type JobRun, type JobState, markJobDeadLettered, recordJobRun } from './repository.ts';
import { type RobotThrottle, robotThrottle } from './throttle.ts';

/** The I/O of the notification consumer (delivery.ts, send.ts) in one object, so a test can run it on its own. */

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
  /** A run recorded in its job item (AP-N2). */
  recordJobRun(run: JobRun): Promise<void>;
  /** The settled first runs of a batch, recorded as one notification log item per task (AP-N9). */
  logRuns(runs: JobRun[]): Promise<void>;
  /** A job's settled first run in its task's notification log at or after `sinceMs` (AP-N10). */
  loggedRun(taskId: number, jobId: string, sinceMs: number): Promise<LoggedRun | undefined>;
  providers: Providers;
  throttle: RobotThrottle;
}

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
    markDeadLettered: async (jobs) => {
      await Promise.all(jobs.map((j) => markJobDeadLettered(j.job_id, j.attempts_before ?? 0)));
    },
    logRuns: putNotifyLogs,
    loggedRun: async (taskId, jobId, sinceMs) =>
      (await findLoggedRuns(taskId, sinceMs, nowMs() + 60_000, [jobId])).get(jobId),
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
