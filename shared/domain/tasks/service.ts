/**
 * Use cases of the alarm task API (API guide §5): validate -> load -> transition ->
 * conditional persist -> publish. Each takes a `deps` object defaulting to the real adapters.
 */
import { nowSeconds } from '../../clock.ts';
import { logger } from '../../log.ts';
import { newToken } from '../auth/signature.ts';
import * as directory from '../directory/repository.ts';
import * as schedules from '../schedules/repository.ts';
import { type AlarmGroup, type Department, toPinyin, type User } from '../directory/model.ts';
import type { DueItem } from '../due/repository.ts';
import { putDue } from '../due/repository.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { pingEvent } from '../events/payloads.ts';
import { publishWebhookEvents } from '../events/publish.ts';
import { TASK_RUNNING, type Task, type TaskConfig } from './model.ts';
import { assertTaskOutboundUrls } from '../channels/outbound-urls.ts';
import * as repo from './repository.ts';
import * as taskWrites from './repository-writes.ts';
import { openReceiverRobots, openTaskRobots } from '../channels/robots.ts';
import { applyFieldPaths, fieldPathErrors } from './field-paths.ts';
import { configFingerprint, configOf } from './normalize.ts';
import { phoneChannelUids, referencedGroupIds, referencedScheduleIds, webhookOf } from './references.ts';
import { parseConfig, parseCreateBody } from './rules.ts';
import { pauseTransition, startTransition, stopTransition } from './transitions.ts';
import type { TaskChanged, TaskPaused, TaskShown, TaskStored } from './responses.ts';
import { detailGroupIds, detailUids, storeView, taskDetail } from './views.ts';

export const taskDeps = {
  now: nowSeconds,
  getTask: repo.getTask,
  allocateTaskId: taskWrites.allocateTaskId,
  createTaskItems: taskWrites.createTaskItems,
  replaceTaskItems: taskWrites.replaceTaskItems,
  deleteTaskItems: taskWrites.deleteTaskItems,
  listTaskPermissions: repo.listTaskPermissions,
  updateTaskStatus: taskWrites.updateTaskStatus,
  resumePausedTask: taskWrites.resumePausedTask,
  getUser: directory.getUser,
  getUsers: directory.getUsers,
  getDepartment: directory.getDepartment,
  getAlarmGroups: directory.getAlarmGroups,
  getTags: directory.getTags,
  getTemplate: directory.getTemplate,
  getSchedules: schedules.getSchedules,
  publishWebhookEvents,
  putDue,
  sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
};
export type TaskDeps = typeof taskDeps;

/** Attempts of a status or delete write that lost an optimistic-concurrency race before a 409. */
const MAX_ATTEMPTS = 5;
/**
 * How often a configuration write re-applies itself after losing races, with jittered backoff
 * (API guide §5.6: every concurrent partial update of different fields survives; twenty at once settle
 * in a few rounds). About ten seconds of backoff in all before a 409.
 */
export const MAX_UPDATE_ATTEMPTS = 40;

/** Due-work kind that ends a pause (its handler: due-work.ts). */
export const PAUSE_EXPIRY = 'task-pause-expiry';

// biome-ignore lint/suspicious/noExplicitAny: request bodies, validated in rules.ts
type Body = Record<string, any>;

interface References {
  department: Department | undefined;
  creator: User | undefined;
  nullPhoneUsers: User[];
}

/**
 * Checks every directory reference of a configuration (404s: creator, department, alarm groups,
 * template) and collects the users of phone/sms channels without a phone.
 */
async function loadReferences(config: TaskConfig, creatorUid: number, deps: TaskDeps): Promise<References> {
  await assertTaskOutboundUrls(config); // 422: a webhook or robot URL on a blocked address (API guide §12.7)
  const groupIds = referencedGroupIds(config);
  const templateId = config.template.template_id ?? 0;
  const [creator, department, groups, template] = await Promise.all([
    deps.getUser(creatorUid),
    deps.getDepartment(config.department_id),
    groupIds.length ? deps.getAlarmGroups(groupIds) : Promise.resolve([] as AlarmGroup[]),
    templateId > 0 ? deps.getTemplate(templateId) : Promise.resolve(undefined),
    checkSchedules(config, deps),
  ]);
  if (!creator) throw new NotFoundError(`user [${creatorUid}] not found`);
  if (!department) throw new NotFoundError(`department [${config.department_id}] not found`);
  const found = new Set(groups.map((g) => g.id));
  const missing = groupIds.filter((g) => !found.has(g));
  if (missing.length) throw new NotFoundError(`alarm group [${missing.join(', ')}] not found`);
  if (templateId > 0 && !template) throw new NotFoundError(`template [${templateId}] not found`);
  const phoneUids = phoneChannelUids(config, groups);
  const phoneUsers = phoneUids.length ? await deps.getUsers(phoneUids) : [];
  return { department, creator, nullPhoneUsers: phoneUsers.filter((u) => !u.phone) };
}

/** 404 naming the schedules the receivers name that do not exist. */
async function checkSchedules(config: TaskConfig, deps: TaskDeps): Promise<void> {
  const ids = referencedScheduleIds(config);
  if (ids.length === 0) return;
  const found = new Set((await deps.getSchedules(ids)).map((s) => s.id));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length) throw new NotFoundError(`schedule [${missing.join(', ')}] not found`);
}

/** PING when the task now has a webhook URL it did not have before (API guide §12.4). */
async function pingIfNewWebhook(task: Task, before: string | undefined, deps: TaskDeps): Promise<void> {
  const url = webhookOf(task);
  if (!url || url === before) return;
  try {
    await deps.publishWebhookEvents(task.id, [{ body: pingEvent() }]);
  } catch (err) {
    // The configuration is saved; a lost PING (a test event) must not turn the request into a failure.
    logger.error('PING event not queued', { taskId: task.id, error: err as Error });
  }
}

async function reread(id: number, deps: TaskDeps): Promise<Task> {
  const task = await deps.getTask(id, true);
  if (!task) throw new NotFoundError(`task [${id}] not found`);
  return task;
}

const raced = (id: number) => new ConflictError(`task [${id}] was changed concurrently, please retry`);

/** POST /alarmtask/store */
export async function createTask(body: Body, deps: TaskDeps = taskDeps): Promise<TaskStored> {
  const { created_by, config } = parseCreateBody(body);
  const items = 2 + new Set([...config.permission.rw, ...config.permission.ro]).size;
  if (items + taskWrites.referenceWriteCount(undefined, config) > taskWrites.MAX_TRANSACTION_ITEMS)
    throw ValidationError.of('receiver', 'names too many schedules with these permissions');
  const refs = await loadReferences(config, created_by, deps);
  const now = deps.now();
  const task: Task = {
    ...config,
    id: await deps.allocateTaskId(),
    pinyin: toPinyin(config.name),
    token: newToken(),
    secret: newToken(),
    status: TASK_RUNNING,
    created_by,
    created_at: now,
    updated_at: now,
    version: 1,
    config_version: 1,
    config_saved_at: now,
  };
  const result = await deps.createTaskItems(task);
  if (result === 'name-taken') throw new ConflictError(`task [${task.name}] already exists`);
  // A schedule deleted since the check above.
  if (result === 'schedule-gone') await checkSchedules(config, deps);
  if (result !== 'ok') throw new Error(`task id ${task.id} allocated twice`);
  await pingIfNewWebhook(task, undefined, deps);
  return storeView(task, refs.department, refs.creator, refs.nullPhoneUsers, now);
}

/**
 * Writes a new configuration over a task under its version; on a lost race re-reads the task and
 * re-derives the configuration (`derive` sees the current task), up to MAX_ATTEMPTS times.
 */
async function replaceConfig(
  task: Task,
  derive: (current: Task) => TaskConfig,
  deps: TaskDeps,
  guard?: SaveGuard,
): Promise<TaskStored> {
  let current = task;
  // References depend on the configuration only: a retry whose configuration names the same ones
  // does not read them (and check their URLs) again.
  let loaded: { key: string; refs: References } | undefined;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      if (attempt >= MAX_UPDATE_ATTEMPTS) throw raced(task.id);
      // Full jitter: writers that collided spread out instead of colliding again.
      await deps.sleep(Math.random() * Math.min(400, 20 * 2 ** attempt));
      current = await reread(task.id, deps);
    }
    const config = derive(current);
    if (guard) checkGuard(guard, current, config);
    const key = JSON.stringify([current.created_by, config]);
    if (loaded?.key !== key) loaded = { key, refs: await loadReferences(config, current.created_by, deps) };
    const refs = loaded.refs;
    const writes = taskWrites.permissionWriteCount(current.permission, config.permission);
    if (writes + 3 > taskWrites.MAX_TRANSACTION_ITEMS) {
      throw ValidationError.of(
        'permission',
        `may change at most ${taskWrites.MAX_TRANSACTION_ITEMS - 3} users at once`,
      );
    }
    if (writes + 3 + taskWrites.referenceWriteCount(current, config) > taskWrites.MAX_TRANSACTION_ITEMS) {
      throw ValidationError.of('receiver', 'changes too many schedules at once with these permissions');
    }
    const now = deps.now();
    const next: Task = {
      ...current,
      ...config,
      // A kept name keeps its pinyin: most updates then never load pinyin-pro (see toPinyin).
      pinyin: config.name === current.name ? current.pinyin : toPinyin(config.name),
      updated_at: Math.max(now, current.updated_at),
      version: current.version + 1,
      config_version: current.version + 1,
      config_saved_at: Math.max(now, current.updated_at),
    };
    const result = await deps.replaceTaskItems(current, next);
    if (result === 'name-taken') throw new ConflictError(`task [${next.name}] already exists`);
    if (result === 'schedule-gone') await checkSchedules(config, deps);
    if (result === 'ok') {
      await pingIfNewWebhook(next, webhookOf(current), deps);
      return storeView(next, refs.department, refs.creator, refs.nullPhoneUsers, now);
    }
  }
}

/**
 * A save that must write exactly the configuration a what-if replay replayed, over the task as the
 * replay read it (`PUT /alarmtask/update|updatefields` with `replay_id`): 409 otherwise, and a lost
 * race is a 409 too (the task changed), never retried.
 */
export interface SaveGuard {
  /** Who asks (`replay [id]`), for the messages. */
  what: string;
  /** The task's version when the replay read it. */
  version: number;
  /** configFingerprint of the configuration replayed. */
  fingerprint: string;
}

function checkGuard(guard: SaveGuard, current: Task, config: TaskConfig): void {
  if (current.version !== guard.version)
    throw new ConflictError(
      `task [${current.id}] changed since ${guard.what} (version ${guard.version} then, ${current.version} now): replay again`,
    );
  if (configFingerprint(config) !== guard.fingerprint)
    throw new ConflictError(`the configuration differs from the one ${guard.what} replayed`);
}

/** The configuration PUT /alarmtask/update saves over `task` (validated: 4000/422 otherwise). */
export function updatedConfig(task: Task, body: Body): TaskConfig {
  return parseConfig(body, task.created_by);
}

/** The configuration PUT /alarmtask/updatefields saves over `task`: the listed paths copied in. */
export function updatedFieldsConfig(task: Task, body: Body): TaskConfig {
  const paths = body.filter_fields as string[];
  const errors = fieldPathErrors(paths);
  if (errors.length) throw new ValidationError(errors);
  // The stored robots are sealed: the configuration is edited and validated in plain.
  return parseConfig(applyFieldPaths(configOf(openTaskRobots(task)), body, paths), task.created_by);
}

/** PUT /alarmtask/update: whole configuration replaced (API guide §5.6). */
export async function updateTask(
  task: Task,
  body: Body,
  deps: TaskDeps = taskDeps,
  guard?: SaveGuard,
): Promise<TaskStored> {
  const config = updatedConfig(task, body);
  return replaceConfig(task, () => config, deps, guard);
}

/** PUT /alarmtask/updatefields: listed paths copied from the request, the rest kept (API guide §5.7). */
export async function updateTaskFields(
  task: Task,
  body: Body,
  deps: TaskDeps = taskDeps,
  guard?: SaveGuard,
): Promise<TaskStored> {
  return replaceConfig(task, (current) => updatedFieldsConfig(current, body), deps, guard);
}

/**
 * GET /alarmtask/show: API guide §5.8, directory records read in batches. Robots (the task's and its
 * alarm groups') are shown in plain, as they were given.
 */
export async function showTask(sealed: Task, deps: TaskDeps = taskDeps): Promise<TaskShown> {
  const task = openTaskRobots(sealed);
  const templateId = task.template.template_id ?? 0;
  const groupIds = detailGroupIds(task);
  const [tags, template, groups, department] = await Promise.all([
    task.task_tags.length ? deps.getTags(task.task_tags) : Promise.resolve([]),
    templateId > 0 ? deps.getTemplate(templateId) : Promise.resolve(undefined),
    groupIds.length ? deps.getAlarmGroups(groupIds) : Promise.resolve([] as AlarmGroup[]),
    deps.getDepartment(task.department_id),
  ]);
  const users = await deps.getUsers(detailUids(task, tags, template));
  const dir = {
    users: new Map(users.map((u) => [u.uid, u])),
    groups: new Map(groups.map((g) => [g.id, { ...g, receiver: openReceiverRobots(g.receiver) }])),
    tags: new Map(tags.map((t) => [t.id, t])),
    template,
    department,
  };
  return { task: taskDetail(task, dir, deps.now()) };
}

/** DELETE /alarmtask: the task, its name guard and its permission items, in one transaction. */
export async function deleteTask(task: Task, deps: TaskDeps = taskDeps): Promise<TaskChanged> {
  let current = task;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (attempt > 0) current = await reread(task.id, deps);
    const permissions = await deps.listTaskPermissions(current.id);
    if ((await deps.deleteTaskItems(current, permissions)) === 'ok') return { id: current.id };
  }
  throw raced(task.id);
}

async function changeStatus(
  task: Task,
  transition: (current: Task, now: number) => { status: number; paused_until?: number },
  deps: TaskDeps,
) {
  let current = task;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (attempt > 0) current = await reread(task.id, deps);
    const now = deps.now();
    const change = transition(current, now);
    if (change.paused_until !== undefined) {
      // Scheduled first: if the status write then fails, the expiry finds nothing to do.
      await deps.putDue(pauseExpiryItem(current.id, change.paused_until));
    }
    if (await deps.updateTaskStatus(current, change, now)) return;
  }
  throw raced(task.id);
}

/** PUT /alarmtask/stop: running or paused -> stopped (API guide §5.9). */
export async function stopTask(task: Task, deps: TaskDeps = taskDeps): Promise<TaskChanged> {
  await changeStatus(task, stopTransition, deps);
  return { id: task.id };
}

/** PUT /alarmtask/start: stopped or paused -> running. */
export async function startTask(task: Task, deps: TaskDeps = taskDeps): Promise<TaskChanged> {
  await changeStatus(task, startTransition, deps);
  return { id: task.id };
}

/** PUT /alarmtask/pause: paused for `time` minutes, then running again by itself. */
export async function pauseTask(task: Task, time: number, deps: TaskDeps = taskDeps): Promise<TaskPaused> {
  await changeStatus(task, (_current, now) => pauseTransition(now, time), deps);
  return { id: task.id, time };
}

export function pauseExpiryItem(taskId: number, pausedUntil: number): DueItem {
  return {
    kind: PAUSE_EXPIRY,
    ref: String(taskId),
    due_at: pausedUntil,
    payload: { task_id: taskId, paused_until: pausedUntil },
  };
}

/** Due work `task-pause-expiry`: persist the end of a pause, unless the task moved on since. */
export async function expirePause(item: DueItem, now: number, deps: TaskDeps = taskDeps): Promise<undefined> {
  const { task_id, paused_until } = item.payload as { task_id: number; paused_until: number };
  await deps.resumePausedTask(task_id, paused_until, now);
  return undefined;
}
