import { randomUUID } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import { config as env } from '../../config/env.ts';
import { logger } from '../../log.ts';
import { publish } from '../../messaging/sqs.ts';
import { sealReceiverRobots } from '../channels/robots.ts';
import { getAlarmGroups, getTemplate, getUsers } from '../directory/repository.ts';
import { AppError, NotFoundError, ValidationError } from '../errors.ts';
import { taskForUser } from '../tasks/access.ts';
import type { Task } from '../tasks/model.ts';
import { getTask } from '../tasks/repository.ts';
import { editedConfig } from './config.ts';
import { computeReplay, type StoredRequest } from './compute.ts';
import { getReplay, putReplay, type ReplayItem } from './repository.ts';
import type { ReplayAnswer, ReplayDone } from './responses.ts';
import type { ExpectInput, ScenarioInput } from './scenario.ts';
import {
  loadRecords,
  MAX_WINDOW_ALARMS,
  readWindow,
  type SourceDeps,
  sourceDeps,
  type WindowSpec,
  windowOf,
} from './source.ts';

/**
 * What-if replays (API guide §13.7): `POST /alarmtask/replay` replays a window of a task's stored
 * alarms through the production pipeline under the saved configuration and an edited one, and
 * answers at once when the window holds at most INLINE_MAX_ALARMS alarms; a larger one runs on the
 * replay queue and is read back with `GET /alarmtask/replay`. Its result is the one item it writes.
 */

/** Windows of at most this many alarms answer in the request; larger ones run on the replay queue. */
export const INLINE_MAX_ALARMS = 1_000;

export interface ReplayInput extends WindowSpec {
  uid: number;
  task_id: number;
  /** A whole configuration (as update), or a partial one with `filter_fields` (as updatefields). */
  config?: Record<string, unknown>;
  scenario?: ScenarioInput[];
  expect?: ExpectInput[];
}

export const replayDeps = {
  now: nowSeconds,
  newId: (): string => randomUUID(),
  taskForUser,
  getTask: (id: number) => getTask(id, true),
  source: sourceDeps as SourceDeps,
  getAlarmGroups,
  getUsers,
  getTemplate,
  putReplay,
  getReplay,
  /** Puts a replay on the replay queue. */
  enqueue: (replayId: string) => publish('replay', [{ body: { kind: 'replay', replay_id: replayId } }]),
  env: () => ({ env: env().envName, timeZone: env().timeZone }),
};
export type ReplayDeps = typeof replayDeps;

/** The request as kept: the edited configuration derived (422 when invalid), receivers sealed. */
function storedRequest(input: ReplayInput, task: Task, now: number): StoredRequest {
  const spec = windowOf(input, now);
  const names = new Set((input.scenario ?? []).map((s) => s.name));
  (input.expect ?? []).forEach((e, i) => {
    if (!names.has(e.alarm))
      throw ValidationError.of(`expect.${i}.alarm`, `names no scenario alarm [${e.alarm}]`);
  });
  const edited = editedConfig(task, input.config);
  return {
    spec,
    now,
    ...(input.config ? { edited: edited.config } : {}),
    fingerprint: edited.fingerprint,
    task_version: task.version,
    ...(input.scenario
      ? {
          scenario: input.scenario.map((s) =>
            s.receiver ? { ...s, receiver: sealReceiverRobots(s.receiver) } : s,
          ),
        }
      : {}),
    ...(input.expect ? { expect: input.expect } : {}),
  };
}

function doneItem(item: ReplayItem, result: ReplayDone, now: number): ReplayItem {
  return {
    replay_id: item.replay_id,
    task_id: item.task_id,
    uid: item.uid,
    status: 'done',
    created_at: item.created_at,
    finished_at: now,
    task_version: result.task_version,
    config_fingerprint: item.config_fingerprint,
    result,
  };
}

/** POST /alarmtask/replay (read permission on the task). */
export async function startReplay(input: ReplayInput, deps: ReplayDeps = replayDeps): Promise<ReplayAnswer> {
  const task = await deps.taskForUser(input.uid, input.task_id, 'read');
  const now = deps.now();
  const request = storedRequest(input, task, now);
  const item: ReplayItem = {
    replay_id: deps.newId(),
    task_id: task.id,
    uid: input.uid,
    status: 'running',
    created_at: now,
    task_version: task.version,
    config_fingerprint: request.fingerprint,
  };
  const peek = await readWindow(task.id, request.spec, now, INLINE_MAX_ALARMS, deps.source);
  if (peek.more) {
    await deps.putReplay({ ...item, request });
    await deps.enqueue(item.replay_id);
    return { replay_id: item.replay_id, status: 'running', task_id: task.id, created_at: now };
  }
  const loaded = await loadRecords(task.id, peek, deps.source);
  const result = await computeReplay(item, request, task, loaded, deps);
  await deps.putReplay(doneItem(item, result, deps.now()));
  return result;
}

/** GET /alarmtask/replay: a replay, to whoever may read its task. */
export async function showReplay(
  input: { uid: number; replay_id: string },
  deps: ReplayDeps = replayDeps,
): Promise<ReplayAnswer> {
  const item = await deps.getReplay(input.replay_id);
  if (!item) throw new NotFoundError(`replay [${input.replay_id}] not found`);
  await deps.taskForUser(input.uid, item.task_id, 'read');
  const head = { replay_id: item.replay_id, task_id: item.task_id, created_at: item.created_at };
  if (item.status === 'done') return item.result as ReplayDone;
  if (item.status === 'failed')
    return { ...head, status: 'failed', error: item.error ?? { code: 500, msg: 'internal error' } };
  return { ...head, status: 'running' };
}

/**
 * The replay queue's consumer: runs a replay that waits there. A refusal (the window holds too many
 * alarms, the task was deleted) fails the replay; anything else is retried by the queue until the
 * last receive, which fails it.
 */
export async function runQueuedReplay(
  replayId: string,
  lastAttempt: boolean,
  deps: ReplayDeps = replayDeps,
): Promise<void> {
  const item = await deps.getReplay(replayId);
  if (item?.status !== 'running') return;
  const request = item.request as StoredRequest;
  const fail = (error: { code: number; msg: string }) =>
    deps.putReplay({ ...item, request: undefined, status: 'failed', finished_at: deps.now(), error });
  try {
    const task = await deps.getTask(item.task_id);
    if (!task) throw new NotFoundError(`task [${item.task_id}] not found`);
    const limit = 'last' in request.spec ? request.spec.last : MAX_WINDOW_ALARMS;
    const read = await readWindow(task.id, request.spec, request.now, limit, deps.source);
    if (read.more)
      throw ValidationError.of(
        'from',
        `the window holds more than ${MAX_WINDOW_ALARMS} alarms: narrow it (or replay the last ones)`,
      );
    const loaded = await loadRecords(task.id, read, deps.source);
    const result = await computeReplay(item, request, task, loaded, deps);
    await deps.putReplay(doneItem({ ...item, request: undefined }, result, deps.now()));
  } catch (err) {
    if (err instanceof AppError) return fail({ code: err.code, msg: err.message });
    logger.error('replay failed', { replayId, lastAttempt, error: err as Error });
    if (lastAttempt) return fail({ code: 500, msg: 'internal error' });
    throw err;
  }
}

/** Receives of a replay message before it is failed for good (the replay queue's maxReceiveCount). */
export const REPLAY_RECEIVES = 2;

/** The replay queue's batch: each message names a replay; returns the ids of the messages to retry. */
export async function runQueuedReplayMessages(
  messages: { id: string; body: string; receiveCount: number }[],
  deps: ReplayDeps = replayDeps,
): Promise<string[]> {
  const failed: string[] = [];
  for (const m of messages) {
    let replayId: unknown;
    try {
      replayId = (JSON.parse(m.body) as { replay_id?: unknown }).replay_id;
    } catch {
      replayId = undefined;
    }
    if (typeof replayId !== 'string') {
      logger.error('malformed replay message; left for the dead-letter queue', { messageId: m.id });
      failed.push(m.id);
      continue;
    }
    try {
      await runQueuedReplay(replayId, m.receiveCount >= REPLAY_RECEIVES, deps);
    } catch {
      failed.push(m.id);
    }
  }
  return failed;
}
