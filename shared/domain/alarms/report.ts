import { randomUUID } from 'node:crypto';
import { formatDateTime, nowMs, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { isObject, isRawJson, nestingDepth, toWireJson } from '../../json.ts';
import { logger } from '../../log.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { enqueue } from '../../messaging/sqs.ts';
import { loadSealKey } from '../auth/seal.ts';
import { withinSkew } from '../auth/signature.ts';
import { signedWith } from '../tasks/credentials.ts';
import { getAlarmGroups } from '../directory/repository.ts';
import {
  AlarmError,
  type FieldError,
  PayloadTooLargeError,
  UnauthorizedError,
  ValidationError,
} from '../errors.ts';
import { outboundUrlErrors, type ReceiverLike } from '../channels/outbound-urls.ts';
import type { Task } from '../tasks/model.ts';
import type { Level } from '../../contracts/levels.ts';
import type { Channels, ReceiverConfig, Robot } from '../../contracts/receivers.ts';
import { effectiveStatus, TASK_PAUSED, TASK_STOPPED } from '../tasks/model.ts';
import { ROBOT_CHANNELS, USER_CHANNELS } from '../../contracts/receivers.ts';
import { sealRobot } from '../channels/robots.ts';
import { validateReport } from '../../generated/validators/alarm-report.ts';
import { heartbeatOf } from './heartbeat.ts';
import { type AlarmLimiter, alarmRateLimiter } from './rate-limit.ts';
import {
  getReportReceipt,
  markReceiptQueued,
  putReportReceipt,
  type ReportReceipt,
} from './report-repository.ts';
import { MAX_CTN_DEPTH } from './report-schemas.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import { normOncall } from '../tasks/normalize.ts';
import { getSchedules } from '../schedules/repository.ts';
import { containerCache } from '../../cache.ts';
import type { NoData } from '../responses.ts';

/**
 * Alarm ingestion (API guide §7; behaviour §15). `POST /alarm/report`: authenticate with the task token ->
 * validate the body (4000) -> task status (4001/4002) -> per-task rate limit (4010) -> durably queue
 * an AlarmMessage on the alarm queue -> answer `{uuid, report_time}`. Processing is asynchronous (the
 * pipeline consumes the alarm queue and de-duplicates by uuid).
 *
 * The hot path reads the task through a per-container cache; its only table write is the rate
 * limit's lease, a few per second for a busy task, not one per alarm (rate-limit.ts). A
 * client-chosen `uuid` opts in to idempotent reports: one GetItem, then (for a new uuid) one
 * conditional PutItem before queueing and one UpdateItem after (the receipt, kept 24 h). A report
 * refused for any reason queues nothing.
 */
export interface AlarmAuthInput {
  taskid?: unknown;
  timestamp?: unknown;
  sign?: unknown;
}

/** An alarm accepted (POST /alarm/report and the adapters of one alarm per request). */
export interface ReportAnswer {
  uuid: string;
  /** Local date and time of the report. */
  report_time: string;
}

export interface ReportDeps {
  getTask: (id: number) => Promise<Task | undefined>;
  /** The task read afresh when a signature does not match the cached one (a rotated token). */
  getFreshTask?: (id: number) => Promise<Task | undefined>;
  /** Ids among `ids` that are not existing alarm groups. */
  missingAlarmGroups: (ids: number[]) => Promise<number[]>;
  /** Ids among `ids` that are not existing schedules. */
  missingSchedules: (ids: number[]) => Promise<number[]>;
  /** Fields of a receiver naming URLs the outbound guard refuses (API guide §12.7). */
  outboundUrlErrors: (receiver: unknown, prefix: string) => Promise<FieldError[]>;
  publishAlarm: (message: AlarmMessage) => Promise<void>;
  /** Records an accepted alarm as the task's sign of life (heartbeat). */
  signOfLife: (task: Task) => Promise<void>;
  getReceipt: (uuid: string, now: number) => Promise<ReportReceipt | undefined>;
  putReceipt: (receipt: ReportReceipt, now: number) => Promise<ReportReceipt>;
  markReceiptQueued: (uuid: string) => Promise<void>;
  /** Whether a receipt held by a concurrent request becomes `queued` within about a second. */
  queuedSoon: (uuid: string) => Promise<boolean>;
  limiter: AlarmLimiter;
}

const RECEIPT_TTL_SECONDS = 24 * 3600;
/** What one SQS message may carry (the queues allow 1 MiB; a 256 KiB body always fits). */
const MAX_MESSAGE_BYTES = 1024 * 1024;

const groupSeen = new Map<number, number>();

/** Alarm groups exist or not; existing ones are remembered for the task cache's lifetime. */
async function missingAlarmGroups(ids: number[]): Promise<number[]> {
  const now = nowMs();
  const unknown = ids.filter((id) => (groupSeen.get(id) ?? 0) <= now);
  if (unknown.length === 0) return [];
  const found = new Set((await getAlarmGroups(unknown)).map((g) => g.id));
  const until = now + config().taskCacheSeconds * 1000;
  for (const id of found) groupSeen.set(id, until);
  if (groupSeen.size > 5_000) groupSeen.clear();
  return unknown.filter((id) => !found.has(id));
}

/** Schedules exist or not, remembered like tasks (the cache helper). */
const scheduleExists = containerCache<number, boolean>({
  ttlMs: () => config().taskCacheSeconds * 1000,
  maxEntries: 5_000,
  load: async (id) => (await getSchedules([id])).length > 0,
});

export const defaultReportDeps: ReportDeps = {
  getTask: (id) => getTaskCached(id),
  getFreshTask: (id) => getTaskCached(id, { refresh: true }),
  missingAlarmGroups,
  missingSchedules: async (ids) => {
    const exist = await Promise.all(ids.map((id) => scheduleExists.get(id)));
    return ids.filter((_, i) => !exist[i]);
  },
  outboundUrlErrors: (receiver, prefix) => outboundUrlErrors(receiver as ReceiverLike, prefix),
  publishAlarm: (message) => enqueue('alarm', { body: message }),
  signOfLife: heartbeatOf,
  getReceipt: getReportReceipt,
  putReceipt: putReportReceipt,
  markReceiptQueued,
  queuedSoon: async (uuid) => {
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 50));
      if ((await getReportReceipt(uuid, nowSeconds(), true))?.queued) return true;
    }
    return false;
  },
  limiter: alarmRateLimiter,
};

/** The text of a task id and of a signature timestamp (alarm and intake authentication). */
export const TASK_ID = /^[1-9][0-9]{0,15}$/;
export const TIMESTAMP = /^[0-9]{1,12}$/;

/** `taskid`/`timestamp` may be numbers or numeric strings (existing clients send strings). */
function asText(value: unknown, pattern: RegExp): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
    return pattern.test(String(value)) ? String(value) : undefined;
  }
  if (typeof value === 'string' && pattern.test(value)) return value;
  return undefined;
}

/**
 * Alarm authentication (API guide §3.3) with the task token, MD5 or HMAC-SHA256 over
 * `taskid + "&" + timestamp` exactly as sent. The skew is checked first (before any read), so an
 * unknown task and a bad signature cannot be told apart: both are `signature invalid`.
 */
export async function authenticateAlarm(
  input: AlarmAuthInput,
  deps: Pick<ReportDeps, 'getTask' | 'getFreshTask'> = defaultReportDeps,
): Promise<Task> {
  const cfg = config();
  const timestamp = asText(input.timestamp, TIMESTAMP);
  if (timestamp === undefined || !withinSkew(Number(timestamp), nowSeconds(), cfg.alarmSignSkewSeconds)) {
    throw new UnauthorizedError('signature was expired');
  }
  const taskid = asText(input.taskid, TASK_ID);
  const sign = input.sign;
  const invalid = () => new UnauthorizedError('signature invalid');
  if (
    taskid === undefined ||
    !Number.isSafeInteger(Number(taskid)) ||
    typeof sign !== 'string' ||
    sign.length > 128
  ) {
    throw invalid();
  }
  await loadSealKey();
  const signed = (t: Task | undefined): t is Task =>
    !!t && signedWith(t, 'token', taskid, timestamp, sign.toLowerCase(), cfg.legacySign);
  const task = await deps.getTask(Number(taskid));
  if (signed(task)) return task;
  // A token rotated since the task was cached: read it afresh (at most once a second per task).
  if (task && deps.getFreshTask) {
    const fresh = await deps.getFreshTask(Number(taskid));
    if (signed(fresh)) return fresh;
  }
  throw invalid();
}

/** `POST /alarm/test`: authentication only. */
export async function testAlarm(
  input: AlarmAuthInput,
  deps: Pick<ReportDeps, 'getTask'> = defaultReportDeps,
): Promise<NoData> {
  await authenticateAlarm(input, deps);
  return {};
}

interface ReportBody {
  ctn: Record<string, unknown>;
  level: Level;
  notice_time?: number;
  uuid?: string;
  receiver?: ReceiverConfig;
}

interface ReceiverInput {
  alarmgroup?: number[];
  channels?: Record<string, unknown> | [];
  oncall?: unknown;
}

/** The first URL of an override's webhook: a string, `{url}` or (Go SDK) an array of strings. */
function webhookUrlOf(webhook: unknown): string | undefined {
  if (typeof webhook === 'string') return webhook || undefined;
  if (Array.isArray(webhook)) return webhookUrlOf(webhook[0]);
  if (isObject(webhook)) return webhookUrlOf(webhook.url);
  return undefined;
}

/**
 * The override as the pipeline wants it: known channels only, webhook as a URL string, empties
 * dropped. A receiver that names nobody comes back empty: it means "no override" (API guide §7.1).
 */
function normalizeReceiver(input: ReceiverInput): ReceiverConfig {
  const channels: Channels = {};
  const given = (Array.isArray(input.channels) ? {} : (input.channels ?? {})) as Record<string, unknown>;
  for (const ch of USER_CHANNELS) {
    const uids = given[ch] as number[] | undefined;
    if (uids?.length) channels[ch] = [...new Set(uids)];
  }
  for (const ch of ROBOT_CHANNELS) {
    const robots = given[ch] as Robot[] | undefined;
    // Queued and stored sealed (channels/robots.ts): opened only where a robot is called.
    if (robots?.length)
      channels[ch] = robots.map((r) =>
        sealRobot(r.secret ? { webhook: r.webhook, secret: r.secret } : { webhook: r.webhook }),
      );
  }
  const url = webhookUrlOf(given.webhook);
  if (url) channels.webhook = url;
  const out: ReceiverConfig = {};
  if (input.alarmgroup?.length) out.alarmgroup = input.alarmgroup;
  if (Object.keys(channels).length > 0) out.channels = channels;
  const oncall = normOncall(input.oncall);
  if (oncall) out.oncall = oncall;
  return out;
}

/** Scalars the schema checks: a number written with unusual digits (`2.0`) is read as its value. */
const SCALARS = ['level', 'notice_time'] as const;

/** The alarm content rules (API guide §7.3): a non-empty JSON object at most 64 levels deep (4000). */
export function checkCtn(ctn: unknown, name = 'ctn'): asserts ctn is Record<string, unknown> {
  if (!isObject(ctn)) throw AlarmError.invalid(`${name} must be a JSON object`);
  if (Object.keys(ctn).length === 0) throw AlarmError.invalid(`${name} must not be empty`);
  if (nestingDepth(ctn, MAX_CTN_DEPTH) > MAX_CTN_DEPTH)
    throw AlarmError.invalid(`${name} must not be nested deeper than ${MAX_CTN_DEPTH} levels`);
}

/** Body validation (API guide §7.1): every failure is 4000 with a message naming the field. */
async function validateBody(input: Record<string, unknown>, deps: ReportDeps): Promise<ReportBody> {
  checkCtn(input.ctn);
  // The body holds ctn one level down; anything deeper elsewhere is refused the same way.
  if (nestingDepth(input, MAX_CTN_DEPTH + 1) > MAX_CTN_DEPTH + 1)
    throw AlarmError.invalid(`request body must not be nested deeper than ${MAX_CTN_DEPTH + 1} levels`);
  const scalars: Record<string, unknown> = {};
  for (const k of SCALARS) {
    const v = input[k];
    if (v !== undefined) scalars[k] = isRawJson(v) ? Number(v.rawJSON) : v;
  }
  try {
    validateReport({ ...scalars, uuid: input.uuid, receiver: input.receiver });
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    throw new AlarmError(400, 4000, err.message, { errors: err.errors });
  }
  const body: ReportBody = {
    ctn: input.ctn,
    level: (scalars.level ?? 0) as Level,
    notice_time: scalars.notice_time === undefined ? undefined : Number(scalars.notice_time),
    uuid: (input.uuid as string | undefined)?.toLowerCase(),
  };
  if (input.receiver !== undefined) {
    const receiver = normalizeReceiver(input.receiver as ReceiverInput);
    const missing = receiver.alarmgroup ? await deps.missingAlarmGroups(receiver.alarmgroup) : [];
    if (missing.length > 0)
      throw AlarmError.invalid(`receiver.alarmgroup: alarm group [${missing.join(', ')}] not found`);
    // Every URL the override names goes through the one outbound guard (API guide §12.7).
    const refused = receiver.channels ? await deps.outboundUrlErrors(input.receiver, 'receiver') : [];
    if (refused.length > 0)
      throw new AlarmError(400, 4000, `${refused[0].field} ${refused[0].message}`, { errors: refused });
    const unknown = receiver.oncall
      ? await deps.missingSchedules(receiver.oncall.map((o) => o.schedule_id))
      : [];
    if (unknown.length > 0)
      throw AlarmError.invalid(`receiver.oncall: schedule [${unknown.join(', ')}] not found`);
    if (receiver.alarmgroup || receiver.channels || receiver.oncall) body.receiver = receiver;
  }
  return body;
}

/** `POST /alarm/report` (API guide §7.1). */
export async function reportAlarm(
  input: Record<string, unknown>,
  deps: ReportDeps = defaultReportDeps,
): Promise<ReportAnswer> {
  const task = await authenticateAlarm(input, deps);
  const body = await validateBody(input, deps);
  const now = nowSeconds();

  // A repeat of a report whose alarm is on the queue gets the first answer (even if the task has
  // stopped since: that alarm was accepted). Another task's uuid is refused before anything else.
  const earlier = body.uuid ? await deps.getReceipt(body.uuid, now) : undefined;
  if (earlier) {
    const answer = answerOf(earlier, task.id);
    if (earlier.queued) return answer;
  }

  const message: AlarmMessage = {
    kind: 'alarm',
    uuid: body.uuid ?? randomUUID(),
    task_id: task.id,
    level: body.level,
    ctn: body.ctn,
    notice_time: body.notice_time ?? now,
    reported_at: now,
    reported_ms: nowMs(),
    ...(body.receiver ? { receiver: body.receiver } : {}),
  };
  checkMessageSize(message);
  await admit(task, 1, now, deps.limiter);

  let answer: ReportAnswer = { uuid: message.uuid, report_time: formatDateTime(now, config().timeZone) };
  if (body.uuid) {
    // Claim the uuid before queueing: the loser of a race between two tasks queues nothing.
    const mine: ReportReceipt = {
      ...answer,
      task_id: task.id,
      ttl: now + RECEIPT_TTL_SECONDS,
      queued: false,
    };
    const held = earlier ?? (await deps.putReceipt(mine, now));
    answer = answerOf(held, task.id);
    // The same report is being queued by a concurrent request: answer once it is (queue it here only
    // if that does not happen soon: the other request may have failed).
    if (held !== mine && (await deps.queuedSoon(body.uuid))) return answer;
  }
  await deps.publishAlarm(message);
  if (body.uuid) {
    await deps.markReceiptQueued(body.uuid).catch((err: unknown) => {
      // The alarm is queued; a repeat would queue it once more, which the pipeline absorbs.
      logger.warn('could not mark a report receipt queued', { uuid: body.uuid, error: err as Error });
    });
  }
  await deps.signOfLife(task);
  return answer;
}

/**
 * Whether a task takes `count` alarms now (API guide §7.1's order after validation): stopped 4001,
 * paused 4002, then the rate limit 4010 (all `count` or none; a request of more alarms than the
 * limit never passes, with a message naming the per-request cap).
 */
export async function admit(task: Task, count: number, now: number, limiter: AlarmLimiter): Promise<void> {
  const status = effectiveStatus(task, now);
  if (status === TASK_STOPPED) throw AlarmError.stopped();
  if (status === TASK_PAUSED) throw AlarmError.paused();
  const limit = task.rate_limit ?? config().alarmRateLimit;
  const admission = await limiter.take(task.id, limit, count);
  if (admission.ok) return;
  throw admission.reason === 'cap'
    ? AlarmError.overRequestCap(task.id, limit, count, admission.retryAfter)
    : AlarmError.rateLimited(task.id, limit, admission.retryAfter);
}

/** An alarm must fit one queue message (a 256 KiB body always does; 413 otherwise). */
export function checkMessageSize(message: AlarmMessage): void {
  if (Buffer.byteLength(toWireJson(message), 'utf8') > MAX_MESSAGE_BYTES) throw new PayloadTooLargeError();
}

/** A receipt answers a replay of the same task; another task's uuid is refused. */
function answerOf(receipt: ReportReceipt, taskId: number): ReportAnswer {
  if (receipt.task_id !== taskId) throw AlarmError.invalid('uuid was already used by another task');
  return { uuid: receipt.uuid, report_time: receipt.report_time };
}
