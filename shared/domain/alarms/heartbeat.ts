import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { formatDateTime, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { perContainer } from '../../container.ts';
import { db, isConditionFailure, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { logger } from '../../log.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { enqueue } from '../../messaging/sqs.ts';
import type { DueItem } from '../due/repository.ts';
import { putDue } from '../due/repository.ts';
import type { DueResult } from '../due/runner.ts';
import { ConflictError } from '../errors.ts';
import { effectiveStatus, TASK_RUNNING, type Task } from '../tasks/model.ts';
import type { Level } from '../../contracts/levels.ts';
import { getTask } from '../tasks/repository.ts';
import { writeTaskSetting } from '../tasks/settings.ts';
import { namedUuid } from './ids.ts';
import type { HeartbeatPinged, HeartbeatSet } from './responses.ts';

/**
 * Heartbeat, the dead man's switch (API guide §8.5): a task may expect an alarm or
 * a ping at least every `interval` minutes. The setting lives on the task item (`heartbeat`); the
 * state beside it (`TASK#<id>` / `HEARTBEAT`: last sign of life, a miss raised). A due item checks
 * the task once per interval (re-arming itself at the next deadline), so a ping costs one write and
 * silence raises an alarm through the normal pipeline; the next sign of life sends its recovery.
 */
export const HEARTBEAT_KIND = 'heartbeat';

interface HeartbeatState {
  last_seen?: number;
  missed?: boolean;
  missed_at?: number;
  miss_ctn?: Record<string, unknown>;
}

export interface HeartbeatDeps {
  publishAlarm: (message: AlarmMessage) => Promise<void>;
  now: () => number;
}

const defaultDeps: HeartbeatDeps = {
  publishAlarm: (message) => enqueue('alarm', { body: message }),
  now: nowSeconds,
};

function alarmOf(
  task: Task,
  ctn: Record<string, unknown>,
  uuid: string,
  now: number,
  recovery: boolean,
): AlarmMessage {
  return {
    kind: 'alarm',
    uuid,
    task_id: task.id,
    level: (task.heartbeat?.level ?? 2) as Level,
    ctn,
    notice_time: now,
    reported_at: now,
    ...(recovery ? { recovery: true as const } : {}),
  };
}

/** The recovery of a raised miss: the miss's own content, so it reaches the same metric. */
async function recover(task: Task, old: HeartbeatState, now: number, deps: HeartbeatDeps): Promise<void> {
  if (!old.missed || !old.miss_ctn) return;
  const uuid = namedUuid(task.id, `heartbeat:${old.missed_at ?? 0}:recovered`);
  try {
    await deps.publishAlarm(alarmOf(task, old.miss_ctn, uuid, now, true));
  } catch (err) {
    // Not queued: the miss stays raised (with what its recovery needs), so the next sign of life
    // tries again.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.taskHeartbeat(task.id),
        UpdateExpression: 'SET missed = :t, missed_at = :at, miss_ctn = :ctn',
        ExpressionAttributeValues: { ':t': true, ':at': old.missed_at ?? now, ':ctn': old.miss_ctn },
      }),
    );
    throw err;
  }
}

/**
 * A sign of life of a task with a heartbeat (a ping, an accepted alarm, the setting itself): one
 * write; when a miss was raised, its recovery is queued (and the miss restored if that fails).
 */
export async function touchHeartbeat(task: Task, deps: HeartbeatDeps = defaultDeps): Promise<number> {
  const now = deps.now();
  const out = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.taskHeartbeat(task.id),
      UpdateExpression: 'SET last_seen = :now, missed = :f REMOVE miss_ctn, missed_at',
      ExpressionAttributeValues: { ':now': now, ':f': false },
      ReturnValues: 'ALL_OLD',
    }),
  );
  await recover(task, (out.Attributes ?? {}) as HeartbeatState, now, deps);
  return now;
}

/** When this container last recorded a task's sign of life (ms). */
const touchedOf = perContainer(() => new Map<number, number>());
/** Alarms record a sign of life at most this often per container: a write per alarm is not needed. */
const TOUCH_EVERY_MS = 30_000;

/**
 * An accepted alarm is a sign of life for a task with a heartbeat (never fails the request; at most
 * one write per task and container every 30 s).
 */
export async function heartbeatOf(task: Task): Promise<void> {
  if (!task.heartbeat) return;
  const touched = touchedOf();
  const now = Date.now();
  // A quarter of the interval at most, so a short interval is never missed for want of a record.
  const every = Math.min(TOUCH_EVERY_MS, (task.heartbeat.interval * 60_000) / 4);
  if ((touched.get(task.id) ?? 0) > now - every) return;
  if (touched.size > 10_000) touched.clear();
  touched.set(task.id, now);
  await touchHeartbeat(task).catch((err: unknown) => {
    touched.delete(task.id);
    logger.warn('could not record a heartbeat', { taskId: task.id, error: err as Error });
  });
}

/** `GET|POST /alarm/heartbeat`: a ping. */
export async function ping(cached: Task, deps: HeartbeatDeps = defaultDeps): Promise<HeartbeatPinged> {
  // The setting as it is now (the task cache may not hold a change of moments ago); pings are rare.
  const task = (await getTask(cached.id, true)) ?? cached;
  if (!task.heartbeat)
    throw new ConflictError(`task [${task.id}] has no heartbeat; set one with PUT /alarmtask/heartbeat`);
  const at = await touchHeartbeat(task, deps);
  return { last_seen: at, interval: task.heartbeat.interval };
}

export interface HeartbeatSetting {
  interval: number;
  level?: Level;
}

/**
 * `PUT /alarmtask/heartbeat`: expect a sign of life every `interval` minutes (0 turns it off). The
 * silence is counted from now; the check is armed for the first deadline.
 */
export async function configureHeartbeat(
  task: Task,
  input: HeartbeatSetting,
  deps: HeartbeatDeps = defaultDeps,
): Promise<HeartbeatSet> {
  const now = deps.now();
  const setting =
    input.interval > 0 ? { interval: input.interval, level: input.level ?? 2, since: now } : undefined;
  await writeTaskSetting(task, 'heartbeat', setting);
  // Silence is counted from now; a miss raised under the old setting is recovered, not forgotten.
  await touchHeartbeat(task, deps);
  if (setting) await putDue(checkItem(task.id, now + setting.interval * 60, setting.since));
  return { id: task.id, interval: setting?.interval ?? 0, level: setting?.level ?? null };
}

function checkItem(taskId: number, dueAt: number, since: number): DueItem {
  return { kind: HEARTBEAT_KIND, ref: String(taskId), due_at: dueAt, payload: { task_id: taskId, since } };
}

/**
 * The due check: still alive -> re-arm at the next deadline; silent past the deadline -> raise one
 * alarm (level of the setting) and check again an interval later. Stops when the heartbeat was turned
 * off or set anew (another check runs for the new setting), or the task is gone. A task that is not
 * running raises nothing.
 */
export async function checkHeartbeat(
  item: DueItem,
  now: number,
  deps: HeartbeatDeps = defaultDeps,
): Promise<DueResult> {
  try {
    return await check(item, now, deps);
  } catch (err) {
    // The switch must not switch itself off (the due runner buries an item after ten failures):
    // try again in a minute (a miss keeps its uuid, so raising it twice sends it once).
    logger.error('heartbeat check failed; retrying in a minute', { ref: item.ref, error: err as Error });
    return { reschedule: now + 60, payload: item.payload };
  }
}

async function check(item: DueItem, now: number, deps: HeartbeatDeps): Promise<DueResult> {
  const { task_id, since } = item.payload as { task_id: number; since: number };
  const task = await getTask(task_id, true);
  const hb = task?.heartbeat;
  if (!task || !hb || hb.since !== since) return undefined;
  const period = hb.interval * 60;
  const got = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.taskHeartbeat(task_id), ConsistentRead: true }),
  );
  const state = (got.Item ?? {}) as HeartbeatState;
  const last = state.last_seen ?? since;
  if (last + period > now) return { reschedule: last + period };
  if (state.missed || effectiveStatus(task, now) !== TASK_RUNNING) return { reschedule: now + period };
  const ctn = {
    heartbeat: 'missed',
    task: task.name,
    interval_minutes: hb.interval,
    last_seen: formatDateTime(last, config().timeZone),
    message: `no alarm or ping for ${hb.interval} minutes`,
  };
  await deps.publishAlarm(alarmOf(task, ctn, namedUuid(task.id, `heartbeat:${last}`), now, false));
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.taskHeartbeat(task_id),
        UpdateExpression: 'SET missed = :t, missed_at = :now, miss_ctn = :ctn',
        ConditionExpression: 'attribute_not_exists(last_seen) OR last_seen = :last',
        ExpressionAttributeValues: { ':t': true, ':now': now, ':ctn': ctn, ':last': state.last_seen ?? 0 },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    // A sign of life came while the miss was raised: it recovers at once.
    await recover(task, { missed: true, missed_at: now, miss_ctn: ctn }, now, deps);
  }
  return { reschedule: now + period };
}
