/**
 * Pure rules of the alarm task API: validation beyond the JSON Schema of a create body or a full
 * configuration, which then becomes the stored configuration (normalize.ts). No I/O.
 */
import { isObject } from '../../json.ts';
import { type FieldError, ValidationError } from '../errors.ts';
import { compileSchema } from '../validation.ts';
import type { TaskConfig } from './model.ts';
import { ROBOT_CHANNELS, USER_CHANNELS } from '../../contracts/receivers.ts';
import { createTaskSchema, MAX_PERMISSION_USERS, taskConfigSchema } from './schemas.ts';
import { enabled, normalizeConfig, type Raw, webhookUrl } from './normalize.ts';

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

/**
 * Whether a receiver names anyone: an alarm group, a user, a robot, a webhook URL, or a schedule
 * (whoever it has on call).
 */
export function receiverHasTargets(r: unknown): boolean {
  if (!isObject(r)) return false;
  if (Array.isArray(r.alarmgroup) && r.alarmgroup.length > 0) return true;
  if (Array.isArray(r.oncall) && r.oncall.length > 0) return true;
  const c = r.channels;
  if (!isObject(c)) return false;
  for (const ch of [...USER_CHANNELS, ...ROBOT_CHANNELS]) {
    if (Array.isArray(c[ch]) && c[ch].length > 0) return true;
  }
  return webhookUrl(c.webhook) !== undefined;
}

const MODULES = ['workflow', 'filter', 'upgrade', 'compress', 'recovery'] as const;
/** How deeply a disabled module may nest (it is stored as sent, two levels down in the task). */
const MAX_STORED_DEPTH = 24;
/** Keys that would be taken for an object's prototype machinery rather than data. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * A disabled module is stored as sent (API guide §5.4), so its content must be plain data that reads
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
 * Rules the schema cannot word well (API guide §5.2-§5.6). Written defensively: they run on input the
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
 * Validates a create body (API guide §5.2) and returns the stored configuration. Throws a
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
