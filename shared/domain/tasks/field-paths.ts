/**
 * updatefields (API guide §5.7): copy dotted paths from the request into the stored configuration.
 * No I/O.
 */
import { isObject, nestingDepth } from '../../json.ts';
import { type FieldError, ValidationError } from '../errors.ts';
import type { TaskConfig } from './model.ts';
import { UPDATABLE_FIELDS } from './schemas.ts';
import type { Raw } from './normalize.ts';

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
