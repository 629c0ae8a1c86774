/**
 * Pure rules of the alarm task API: validation beyond the JSON Schema, normalization of a request
 * into the stored configuration, `filter_fields` path copying, and the status transitions. No I/O.
 */
import { isObject, nestingDepth } from '../../json.ts';
import { ConflictError, type FieldError, ValidationError } from '../errors.ts';
import { compileSchema } from '../validation.ts';
import type {
  Channels,
  CompressConfig,
  Condition,
  FilterConfig,
  ReceiverConfig,
  RecoveryConfig,
  Reminder,
  Robot,
  Rule,
  Task,
  TaskConfig,
  TaskStatus,
  TemplateConfig,
  TemplateScenes,
  UpgradeConfig,
  UpgradeStrategy,
  WorkflowConfig,
} from './model.ts';
import {
  effectiveStatus,
  ROBOT_CHANNELS,
  TASK_PAUSED,
  TASK_RUNNING,
  NOTIFY_CHANNELS,
  TASK_STOPPED,
  TEMPLATE_SCENES,
  USER_CHANNELS,
} from './model.ts';
import { createTaskSchema, MAX_PERMISSION_USERS, taskConfigSchema, UPDATABLE_FIELDS } from './schemas.ts';

// biome-ignore lint/suspicious/noExplicitAny: request bodies are checked by the schema before use
type Raw = Record<string, any>;

const uniq = <T>(xs: T[]): T[] => [...new Set(xs)];

const validateCreateShape = compileSchema(createTaskSchema);
const validateConfigShape = compileSchema(taskConfigSchema);

function schemaErrors(validate: (v: unknown) => void, value: unknown): FieldError[] {
  try {
    validate(value);
    return [];
  } catch (err) {
    if (err instanceof ValidationError) return err.errors;
    throw err;
  }
}

/** Whether a receiver names anyone: an alarm group, a user, a robot or a webhook URL. */
export function receiverHasTargets(r: unknown): boolean {
  if (!isObject(r)) return false;
  if (Array.isArray(r.alarmgroup) && r.alarmgroup.length > 0) return true;
  const c = r.channels;
  if (!isObject(c)) return false;
  for (const ch of [...USER_CHANNELS, ...ROBOT_CHANNELS]) {
    if (Array.isArray(c[ch]) && c[ch].length > 0) return true;
  }
  return webhookUrl(c.webhook) !== undefined;
}

function webhookUrl(v: unknown): string | undefined {
  if (typeof v === 'string' && v !== '') return v;
  if (isObject(v) && typeof v.url === 'string' && v.url !== '') return v.url;
  return undefined;
}

const enabled = (m: unknown): m is Raw => isObject(m) && m.enable === true;

const MODULES = ['workflow', 'filter', 'upgrade', 'compress', 'recovery'] as const;
/** How deeply a disabled module may nest (it is stored as sent, two levels down in the task). */
const MAX_STORED_DEPTH = 24;
/** Keys that would be taken for an object's prototype machinery rather than data. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * A disabled module is stored as sent (behavior 5.2), so its content must be plain data that reads
 * back the same: keys that are names (not empty, not `__proto__` / `constructor` / `prototype`),
 * bounded nesting, and numbers a JavaScript number holds exactly. The first problem, naming its field.
 */
function freeFormError(v: unknown, field: string, depth = 0): FieldError | undefined {
  if (typeof v === 'number') {
    const a = Math.abs(v);
    if (!Number.isFinite(v) || a > Number.MAX_SAFE_INTEGER)
      return {
        field,
        message: `must be a number between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`,
      };
    if (a !== 0 && a < 1e-130) return { field, message: 'must be 0 or at least 1e-130 in magnitude' };
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  if (depth >= MAX_STORED_DEPTH)
    return { field, message: `must not be nested deeper than ${MAX_STORED_DEPTH} levels` };
  const array = Array.isArray(v);
  for (const [k, x] of Object.entries(v)) {
    if (!array && k === '') return { field, message: 'must not have an empty key' };
    if (!array && RESERVED_KEYS.has(k)) return { field: `${field}.${k}`, message: 'is a reserved key' };
    const err = freeFormError(x, `${field}.${k}`, depth + 1);
    if (err) return err;
  }
  return undefined;
}

/**
 * Rules the schema cannot word well (behavior 5.1, 5.2). Written defensively: they run on input the
 * schema may have refused, so every problem is listed at once.
 */
export function semanticErrors(body: Raw, creator: number | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const needTargets = (r: unknown, field: string) => {
    if (isObject(r) && !receiverHasTargets(r))
      errors.push({ field, message: 'must have alarmgroup or channels' });
  };
  needTargets(body.receiver, 'receiver');
  if (isObject(body.receiver) && Array.isArray(body.receiver.dispatch)) {
    body.receiver.dispatch.forEach((d: unknown, i: number) => {
      if (isObject(d)) needTargets(d.receiver, `receiver.dispatch.${i}.receiver`);
    });
  }
  if (enabled(body.workflow) && Array.isArray(body.workflow.reminds)) {
    body.workflow.reminds.forEach((r: unknown, i: number) => {
      if (isObject(r) && r.reuse_receiver === 0) needTargets(r.receiver, `workflow.reminds.${i}.receiver`);
    });
  }
  if (enabled(body.upgrade) && Array.isArray(body.upgrade.strategies)) {
    body.upgrade.strategies.forEach((s: unknown, i: number) => {
      if (isObject(s) && s.reuse_receiver === 0) needTargets(s.receiver, `upgrade.strategies.${i}.receiver`);
    });
  }
  for (const m of MODULES) {
    const err = isObject(body[m]) && !enabled(body[m]) ? freeFormError(body[m], m) : undefined;
    if (err) errors.push(err);
  }
  if (enabled(body.compress) && body.compress.method === 2) {
    errors.push({ field: 'compress', message: 'method 2 is not supported' });
  }
  if (isObject(body.template) && body.template.udf !== undefined && body.template.template_id === undefined) {
    errors.push({ field: 'template.template_id', message: 'is required when udf is given' });
  }
  if (isObject(body.permission)) {
    const list = (v: unknown) => (Array.isArray(v) ? v : []);
    const users = new Set([...list(body.permission.rw), ...list(body.permission.ro)]);
    if (creator !== undefined) users.add(creator);
    if (users.size > MAX_PERMISSION_USERS) {
      errors.push({
        field: 'permission',
        message: `must name at most ${MAX_PERMISSION_USERS} distinct users`,
      });
    }
  }
  return errors;
}

/**
 * Validates a create body (interface 4.3) and returns the stored configuration. Throws a
 * ValidationError listing every problem.
 */
export function parseCreateBody(body: Raw): { created_by: number; config: TaskConfig } {
  const errors = [...schemaErrors(validateCreateShape, body), ...semanticErrors(body, body?.created_by)];
  if (errors.length) throw new ValidationError(errors);
  return { created_by: body.created_by, config: normalizeConfig(body, body.created_by) };
}

/** Validates a full configuration for an existing task (update, updatefields result). */
export function parseConfig(body: Raw, creator: number): TaskConfig {
  const errors = [...schemaErrors(validateConfigShape, body), ...semanticErrors(body, creator)];
  if (errors.length) throw new ValidationError(errors);
  return normalizeConfig(body, creator);
}

// ---------------------------------------------------------------------------------------------
// Normalization: request form -> stored form (unknown fields dropped, defaults applied).

function normRule(r: Raw): Rule {
  return {
    field: r.field,
    operator: r.operator,
    ...(r.threshold !== undefined ? { threshold: r.threshold } : {}),
  };
}

function normConditions(cs: Raw[]): Condition[] {
  return cs.map((c) => ({ rule: (c.rule as Raw[]).map(normRule) }));
}

function normChannels(c: Raw | undefined): Channels | undefined {
  if (!c) return undefined;
  const out: Channels = {};
  for (const ch of USER_CHANNELS) if (Array.isArray(c[ch]) && c[ch].length) out[ch] = uniq(c[ch] as number[]);
  for (const ch of ROBOT_CHANNELS) {
    if (Array.isArray(c[ch]) && c[ch].length) {
      out[ch] = (c[ch] as Raw[]).map(
        (r): Robot => ({ webhook: r.webhook, ...(r.secret !== undefined ? { secret: r.secret } : {}) }),
      );
    }
  }
  const url = webhookUrl(c.webhook);
  if (url) out.webhook = url;
  return Object.keys(out).length ? out : undefined;
}

export function normReceiver(r: Raw, level: 'task' | 'sub'): ReceiverConfig {
  const out: ReceiverConfig = {};
  if (Array.isArray(r.alarmgroup) && r.alarmgroup.length) out.alarmgroup = uniq(r.alarmgroup as number[]);
  const channels = normChannels(r.channels);
  if (channels) out.channels = channels;
  if (level === 'task') {
    if (Array.isArray(r.dispatch) && r.dispatch.length) {
      out.dispatch = (r.dispatch as Raw[]).map((d) => ({
        conditions: normConditions(d.conditions),
        receiver: normReceiver(d.receiver, 'sub'),
      }));
    }
    out.mode = r.mode ?? 1;
  }
  return out;
}

/** A disabled module is kept as sent, with `enable: false` (behavior 5.2). */
function disabled<T>(m: unknown): T {
  return { ...(isObject(m) ? m : {}), enable: false } as T;
}

const withReceiver = (x: Raw) =>
  x.reuse_receiver === 0
    ? { receiver: normReceiver(x.receiver, 'sub') }
    : ({} as { receiver?: ReceiverConfig });

function normWorkflow(w: unknown): WorkflowConfig {
  if (!enabled(w)) return disabled(w);
  const reminds = ((w.reminds ?? []) as Raw[]).map(
    (r): Reminder => ({
      mode: r.mode,
      status: r.status,
      interval: r.interval,
      reuse_receiver: r.reuse_receiver,
      ...withReceiver(r),
    }),
  );
  return { enable: true, reminds };
}

function normFilter(f: unknown): FilterConfig {
  if (!enabled(f)) return disabled(f);
  return {
    enable: true,
    mode: f.mode,
    conditions: (f.conditions as Raw[]).map((c) => ({
      rule: (c.rule as Raw[]).map(normRule),
      level: c.level,
    })),
    not_match: f.not_match ?? 0,
  };
}

function normUpgrade(u: unknown): UpgradeConfig {
  if (!enabled(u)) return disabled(u);
  const strategies = (u.strategies as Raw[]).map(
    (s): UpgradeStrategy => ({
      interval: s.interval,
      count: s.count,
      level: s.level,
      reuse_receiver: s.reuse_receiver,
      ...withReceiver(s),
    }),
  );
  return { enable: true, strategies };
}

function normCompress(c: unknown): CompressConfig {
  if (!enabled(c)) return disabled(c);
  return {
    enable: true,
    method: c.method,
    ...(c.method === 1 ? { conditions: normConditions(c.conditions) } : {}),
    strategy: c.strategy,
    strategy_cycle: c.strategy_cycle,
    ...([3, 4, 5].includes(c.strategy) ? { strategy_count: c.strategy_count } : {}),
    not_match: c.not_match ?? 1,
  };
}

function normRecovery(r: unknown): RecoveryConfig {
  if (!enabled(r)) return disabled(r);
  return r.mode === 1
    ? { enable: true, mode: 1, conditions: normConditions(r.conditions) }
    : { enable: true, mode: 2, delay_interval: r.delay_interval };
}

function normTemplate(t: unknown): TemplateConfig {
  if (!isObject(t)) return { template_id: 0 };
  const udf: TemplateScenes = {};
  if (isObject(t.udf)) {
    for (const scene of TEMPLATE_SCENES) {
      const s = t.udf[scene];
      if (!isObject(s)) continue;
      const entries: Raw = {};
      for (const ch of NOTIFY_CHANNELS) {
        if (!isObject(s[ch])) continue;
        const { format, template } = s[ch];
        entries[ch] = {
          ...(format !== undefined ? { format } : {}),
          ...(template !== undefined ? { template } : {}),
        };
      }
      if (Object.keys(entries).length) udf[scene] = entries;
    }
  }
  return { template_id: (t.template_id as number | undefined) ?? 0, ...(Object.keys(udf).length ? { udf } : {}) };
}

/** rw always holds the creator; a uid in both lists is rw (interface 4.3, behavior 5.1). */
export function normPermission(p: Raw | undefined, creator: number): { rw: number[]; ro: number[] } {
  const rw = uniq([creator, ...((p?.rw ?? []) as number[])]);
  const ro = uniq((p?.ro ?? []) as number[]).filter((u) => !rw.includes(u));
  return { rw, ro };
}

/** The stored configuration of a validated request. */
export function normalizeConfig(body: Raw, creator: number): TaskConfig {
  return {
    name: body.name,
    department_id: body.department_id,
    flag_save_db: body.flag_save_db,
    task_tags: body.task_tags ?? [],
    permission: normPermission(body.permission, creator),
    receiver: normReceiver(body.receiver, 'task'),
    workflow: normWorkflow(body.workflow),
    filter: normFilter(body.filter),
    upgrade: normUpgrade(body.upgrade),
    compress: normCompress(body.compress),
    recovery: normRecovery(body.recovery),
    template: normTemplate(body.template),
  };
}

export function configOf(task: Task): TaskConfig {
  return {
    name: task.name,
    department_id: task.department_id,
    flag_save_db: task.flag_save_db,
    task_tags: task.task_tags,
    permission: task.permission,
    receiver: task.receiver,
    workflow: task.workflow,
    filter: task.filter,
    upgrade: task.upgrade,
    compress: task.compress,
    recovery: task.recovery,
    template: task.template,
  };
}

// ---------------------------------------------------------------------------------------------
// References a configuration makes to the directory.

/** Every receiver in use: the task's, its dispatch items', and those of enabled reminders and upgrades. */
export function receiversInUse(c: TaskConfig): ReceiverConfig[] {
  const out: ReceiverConfig[] = [c.receiver];
  for (const d of c.receiver.dispatch ?? []) out.push(d.receiver);
  if (c.workflow.enable) for (const r of c.workflow.reminds ?? []) if (r.receiver) out.push(r.receiver);
  if (c.upgrade.enable) for (const s of c.upgrade.strategies ?? []) if (s.receiver) out.push(s.receiver);
  return out;
}

export function referencedGroupIds(c: TaskConfig): number[] {
  return uniq(receiversInUse(c).flatMap((r) => r.alarmgroup ?? []));
}

/**
 * Users placed in a phone or sms channel anywhere in the configuration, alarm-group members
 * included (they are messaged through the group just the same).
 */
export function phoneChannelUids(
  c: TaskConfig,
  groups: { id: number; receiver: { channels?: Channels } }[],
): number[] {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const uids: number[] = [];
  for (const r of receiversInUse(c)) {
    const sources = [r.channels, ...(r.alarmgroup ?? []).map((g) => byId.get(g)?.receiver.channels)];
    for (const ch of sources) uids.push(...(ch?.phone ?? []), ...(ch?.sms ?? []));
  }
  return uniq(uids);
}

export const webhookOf = (c: Pick<TaskConfig, 'receiver'>): string | undefined =>
  c.receiver.channels?.webhook;

// ---------------------------------------------------------------------------------------------
// updatefields (behavior 5.3): copy dotted paths from the request into the stored configuration.

const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'prototype', 'constructor']);

export function fieldPathErrors(paths: string[]): FieldError[] {
  const errors: FieldError[] = [];
  for (const path of paths) {
    const segs = path.split('.');
    const ok =
      (UPDATABLE_FIELDS as readonly string[]).includes(segs[0]) &&
      segs.every((s) => s !== '' && !FORBIDDEN_SEGMENTS.has(s));
    if (!ok) errors.push({ field: path, message: 'is not an updatable field' });
  }
  return errors;
}

const isIndex = (s: string) => /^(0|[1-9]\d{0,5})$/.test(s);

function getPath(obj: unknown, segs: string[]): unknown {
  let cur = obj;
  for (const s of segs) {
    if (Array.isArray(cur) && isIndex(s)) cur = cur[Number(s)];
    else if (isObject(cur) && Object.hasOwn(cur, s)) cur = cur[s];
    else return undefined;
  }
  return cur;
}

function setPath(obj: Raw, segs: string[], value: unknown, path: string): void {
  let cur: Raw | unknown[] = obj;
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i];
    const last = i === segs.length - 1;
    if (Array.isArray(cur)) {
      if (!isIndex(s) || Number(s) > cur.length) {
        throw ValidationError.of(path, 'does not address a field of the configuration');
      }
      if (last) cur[Number(s)] = value;
      else {
        const next = cur[Number(s)];
        if (!isObject(next) && !Array.isArray(next)) cur[Number(s)] = {};
        cur = cur[Number(s)] as Raw;
      }
    } else {
      if (last) cur[s] = value;
      else {
        const next = cur[s];
        if (!isObject(next) && !Array.isArray(next)) cur[s] = {};
        cur = cur[s];
      }
    }
  }
}

function deletePath(obj: Raw, segs: string[]): void {
  const parent = getPath(obj, segs.slice(0, -1));
  const s = segs[segs.length - 1];
  if (Array.isArray(parent) && isIndex(s)) {
    if (Number(s) < parent.length) parent.splice(Number(s), 1);
  } else if (isObject(parent)) {
    delete parent[s];
  }
}

/**
 * The configuration after copying each path from the request (a path absent from the request
 * clears that value); everything else is the stored configuration. The result is not validated.
 */
/** The deepest value a partial update copies (the configuration itself is far shallower). */
const MAX_COPY_DEPTH = 64;

/** Top-level fields that are single values: a path cannot go below them. */
const SCALAR_FIELDS = new Set(['name', 'department_id', 'flag_save_db']);

/** Whether a path goes below a single value (in the stored configuration or in the request). */
function descendsIntoValue(segs: string[], ...sources: unknown[]): boolean {
  if (SCALAR_FIELDS.has(segs[0])) return segs.length > 1;
  return sources.some((src) => {
    let cur = src;
    for (const s of segs.slice(0, -1)) {
      if (cur === undefined) return false;
      if (cur === null || typeof cur !== 'object') return true;
      cur = Array.isArray(cur)
        ? isIndex(s)
          ? cur[Number(s)]
          : undefined
        : Object.hasOwn(cur, s)
          ? (cur as Raw)[s]
          : undefined;
    }
    return cur !== undefined && (cur === null || typeof cur !== 'object');
  });
}

export function applyFieldPaths(stored: TaskConfig, request: Raw, paths: string[]): Raw {
  const errors = fieldPathErrors(paths);
  for (const path of paths) {
    if (errors.some((e) => e.field === path)) continue;
    if (descendsIntoValue(path.split('.'), stored, request))
      errors.push({ field: path, message: 'does not address a field of the configuration' });
    // Copying the value clones it: absurd nesting is refused before (the rules refuse it anyway).
    else if (nestingDepth(getPath(request, path.split('.')), MAX_COPY_DEPTH) > MAX_COPY_DEPTH)
      errors.push({ field: path, message: `must not be nested deeper than ${MAX_COPY_DEPTH} levels` });
  }
  if (errors.length) throw new ValidationError(errors);
  const out = structuredClone(stored) as unknown as Raw;
  for (const path of paths) {
    const segs = path.split('.');
    const value = getPath(request, segs);
    if (value === undefined) deletePath(out, segs);
    else setPath(out, segs, structuredClone(value), path);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Status transitions (behavior 5.4).

export const MAX_PAUSE_MINUTES = 10_080;

export function stopTransition(task: Task, now: number): { status: TaskStatus } {
  if (effectiveStatus(task, now) === TASK_STOPPED)
    throw new ConflictError(`task [${task.id}] is already stopped`);
  return { status: TASK_STOPPED };
}

export function startTransition(task: Task, now: number): { status: TaskStatus } {
  if (effectiveStatus(task, now) === TASK_RUNNING)
    throw new ConflictError(`task [${task.id}] is already running`);
  return { status: TASK_RUNNING };
}

export function pauseTransition(now: number, minutes: number): { status: TaskStatus; paused_until: number } {
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_PAUSE_MINUTES) {
    throw ValidationError.of('time', `must be an integer from 1 to ${MAX_PAUSE_MINUTES}`);
  }
  return { status: TASK_PAUSED, paused_until: now + minutes * 60 };
}
