import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { formatDateTime, nowMs, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { enqueue, publish } from '../../messaging/sqs.ts';
import { loadSealKey } from '../auth/seal.ts';
import { signedWith } from '../tasks/credentials.ts';
import { getIntakeHash, putIntakeHash } from '../tasks/repository-writes.ts';
import { AlarmError, UnauthorizedError } from '../errors.ts';
import { writeTaskSetting } from '../tasks/settings.ts';
import type { Task } from '../tasks/model.ts';
import type { Level } from '../../contracts/levels.ts';
import type { IntakeAlarm } from './adapters.ts';
import { heartbeatOf } from './heartbeat.ts';
import { namedUuid } from './ids.ts';
import { type AlarmLimiter, alarmRateLimiter } from './rate-limit.ts';
import { admit, checkCtn, checkMessageSize, TASK_ID, TIMESTAMP } from './report.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import type { FixedSignSet, IntakeTokenSet } from './responses.ts';

/**
 * The monitors' door (API guide §8): authentication from the query string (or
 * an intake token), then the same content rules, task status, rate limit and durable queueing as
 * `/alarm/report`. These routes keep the HTTP statuses of API guide §2.2 (a monitor reads nothing else).
 */

export interface IntakeCredentials {
  /** The query string. */
  query: Record<string, string | undefined>;
  /** The `Authorization` header. */
  authorization?: string;
}

export interface IntakeDeps {
  getTask: (id: number) => Promise<Task | undefined>;
  /** The task's intake token item (never cached): undefined when none was ever written there. */
  getIntake: typeof getIntakeHash;
  /** The task read afresh when the fixed signature does not match the cached one (a rotated token). */
  getFreshTask?: (id: number) => Promise<Task | undefined>;
  publishAlarms: (messages: AlarmMessage[]) => Promise<void>;
  /** Records an accepted alarm as the task's sign of life (heartbeat). */
  signOfLife: (task: Task) => Promise<void>;
  limiter: AlarmLimiter;
}

export const defaultIntakeDeps: IntakeDeps = {
  getTask: (id) => getTaskCached(id),
  getIntake: getIntakeHash,
  getFreshTask: (id) => getTaskCached(id, { refresh: true }),
  publishAlarms: (messages) =>
    messages.length === 1
      ? enqueue('alarm', { body: messages[0] })
      : publish(
          'alarm',
          messages.map((body) => ({ body })),
        ),
  signOfLife: heartbeatOf,
  limiter: alarmRateLimiter,
};

/** SHA-256 (hex) of an intake token: what the task item keeps. */
export function intakeHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new intake token (shown once; only its hash is stored). */
export function newIntakeToken(): string {
  return `tki_${randomBytes(24).toString('base64url')}`;
}

function bearerOf(authorization: string | undefined): string | undefined {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m?.[1];
}

/**
 * Who may report through an adapter: `taskid` in the query and either
 * - the intake token (`Authorization: Bearer <token>`, or `token` in the query), compared with the
 *   task's intake token item, read on every request (never from a cache: a new token ends the old one
 *   at once; a task whose token predates that item keeps it on the task item until it is replaced);
 * - the original's fixed signature: `timestamp` and `sign` in the query, signed as API guide §3.3 with
 *   the task token (or the previous one during a rotation's overlap) but with a window of
 *   FIXED_SIGN_MAX_DAYS (365) after its timestamp instead of the skew (a monitor's URL is configured
 *   once), when the task turned it on (off by default). A timestamp more than the skew ahead of the
 *   clock is refused.
 * Every failure is 401 `signature invalid` (which part was wrong is not revealed).
 */
export async function authenticateIntake(
  creds: IntakeCredentials,
  deps: Pick<IntakeDeps, 'getTask' | 'getIntake' | 'getFreshTask'> = defaultIntakeDeps,
): Promise<Task> {
  const invalid = () => new UnauthorizedError('signature invalid');
  const taskid = creds.query.taskid;
  if (!taskid || !TASK_ID.test(taskid) || !Number.isSafeInteger(Number(taskid))) throw invalid();
  const token = bearerOf(creds.authorization) ?? creds.query.token;
  const { timestamp, sign } = creds.query;
  if (token === undefined && (!timestamp || !TIMESTAMP.test(timestamp) || !sign || sign.length > 128))
    throw invalid();
  if (token !== undefined && (token.length === 0 || token.length > 256)) throw invalid();
  await loadSealKey();
  const id = Number(taskid);
  if (token !== undefined) {
    const [task, item] = await Promise.all([deps.getTask(id), deps.getIntake(id)]);
    if (!task) throw invalid();
    const hash = item ? item.hash : task.intake_hash;
    const stored = hash ? Buffer.from(hash, 'hex') : undefined;
    const given = Buffer.from(intakeHash(token), 'hex');
    if (!stored || stored.length !== given.length || !timingSafeEqual(stored, given)) throw invalid();
    return task;
  }
  const cfg = config();
  const now = nowSeconds();
  const ts = Number(timestamp);
  if (ts > now + cfg.alarmSignSkewSeconds || now - ts > cfg.fixedSignMaxDays * 86_400) throw invalid();
  // The fixed signature is the task's choice (PUT /alarmtask/intake {"fixed_sign": 1}).
  const signed = (t: Task | undefined): t is Task =>
    !!t?.intake_fixed_sign &&
    signedWith(t, 'token', taskid, timestamp as string, (sign as string).toLowerCase(), cfg.legacySign, now);
  const task = await deps.getTask(id);
  if (signed(task)) return task;
  if (task && deps.getFreshTask) {
    const fresh = await deps.getFreshTask(id);
    if (signed(fresh)) return fresh;
  }
  throw invalid();
}

/** The `level` query parameter of an adapter request (0..3; default 0). */
export function requestLevel(query: Record<string, string | undefined>): Level {
  const v = query.level;
  if (v === undefined || v === '') return 0;
  if (!/^[0-3]$/.test(v)) throw AlarmError.invalid('level must be one of 0, 1, 2, 3');
  return Number(v) as Level;
}

/** The alarms of a notification of several alerts, accepted. */
export interface IntakeAnswer {
  /** The alarms' uuids, in the order of the request's alerts. */
  uuids: string[];
  report_time: string;
}

/**
 * Admits and queues the alarms an adapter made of one request, all or none: content rules (4000),
 * task status (4001/4002), the rate limit for all of them (4010, HTTP 429 with Retry-After), then
 * one queue send. An alarm with a dedup key gets a uuid named by it, so a monitor sending it again
 * (Alertmanager re-sends a group's firing alerts whenever the group changes) is processed once.
 */
export async function acceptAlarms(
  task: Task,
  alarms: IntakeAlarm[],
  level: Level,
  deps: IntakeDeps = defaultIntakeDeps,
): Promise<IntakeAnswer> {
  alarms.forEach((a, i) => {
    checkCtn(a.ctn, alarms.length === 1 ? 'ctn' : `alerts[${i}]`);
  });
  const now = nowSeconds();
  const acceptedMs = nowMs();
  const answer = { uuids: [] as string[], report_time: formatDateTime(now, config().timeZone) };
  if (alarms.length === 0) return answer;
  const messages = alarms.map(
    (a): AlarmMessage => ({
      kind: 'alarm',
      uuid: a.dedupKey ? namedUuid(task.id, a.dedupKey) : randomUUID(),
      task_id: task.id,
      level: a.level ?? level,
      ctn: a.ctn,
      notice_time: now,
      reported_at: now,
      reported_ms: acceptedMs,
      ...(a.recovery ? { recovery: true as const } : {}),
      ...(a.dedupKey ? { dedup: true as const } : {}),
    }),
  );
  for (const m of messages) checkMessageSize(m);
  await admit(task, alarms.length, now, deps.limiter);
  await deps.publishAlarms(messages);
  answer.uuids = messages.map((m) => m.uuid);
  await deps.signOfLife(task);
  return answer;
}

/**
 * `PUT /alarmtask/intake`: `{}` issues a new intake token (the previous one stops working at once:
 * the token is read on every use) and shows it once; `{"revoke": 1}` removes it; `{"fixed_sign":
 * 1|0}` turns the original's fixed signature on or off and leaves the token as it is.
 */
export async function issueIntakeToken(
  task: Task,
  input: { revoke?: number; fixed_sign?: number },
): Promise<IntakeTokenSet | FixedSignSet> {
  if (input.fixed_sign !== undefined) {
    await writeTaskSetting(task, 'intake_fixed_sign', input.fixed_sign === 1 ? true : undefined);
    return { id: task.id, fixed_sign: input.fixed_sign === 1 ? 1 : 0 };
  }
  const token = input.revoke === 1 ? undefined : newIntakeToken();
  await putIntakeHash(task.id, token && intakeHash(token));
  // A token from before the intake item: the item now decides; the task item's copy goes.
  if (task.intake_hash) await writeTaskSetting(task, 'intake_hash', undefined);
  return { id: task.id, intake_token: token ?? null };
}
