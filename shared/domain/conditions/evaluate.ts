import { isRawJson } from '../../json.ts';
import type { Condition, Rule } from '../../contracts/receivers.ts';

/**
 * Condition evaluation (API guide §6). Pure: no I/O, no clock.
 *
 * A condition is `{rule: [...]}`; rules within a condition are AND-ed, conditions are OR-ed in order
 * and the first match counts. `field` is a dotted path into the alarm facts (`ctn.a.b`, `level`,
 * `notice_time`); a segment in square brackets is one literal key (`ctn.[a.b].c`).
 */
export interface AlarmFacts {
  ctn: Record<string, unknown>;
  level: number;
  notice_time: number;
}

type Lookup = { found: true; value: unknown } | { found: false };

/**
 * Splits a field path into segments. `ctn.[a.b].c` -> `['ctn', 'a.b', 'c']`. Returns undefined for
 * a malformed path (empty segment, unclosed bracket, text after a closing bracket).
 */
export function parsePath(field: string): string[] | undefined {
  const out: string[] = [];
  let i = 0;
  while (i <= field.length) {
    if (field[i] === '[') {
      const close = field.indexOf(']', i + 1);
      if (close < 0) return undefined;
      out.push(field.slice(i + 1, close));
      i = close + 1;
      if (i < field.length && field[i] !== '.') return undefined;
      i++;
      continue;
    }
    let end = field.indexOf('.', i);
    if (end < 0) end = field.length;
    const seg = field.slice(i, end);
    if (seg === '') return undefined;
    out.push(seg);
    i = end + 1;
  }
  return out.length > 0 ? out : undefined;
}

/** The value at a field path; missing when any step is absent (own keys only) or undefined. */
export function lookup(facts: AlarmFacts, field: string): Lookup {
  const path = parsePath(field);
  if (!path) return { found: false };
  let current: unknown = facts;
  for (const seg of path) {
    if (current === null || typeof current !== 'object' || isRawJson(current) || !Object.hasOwn(current, seg))
      return { found: false };
    current = (current as Record<string, unknown>)[seg];
  }
  return current === undefined ? { found: false } : { found: true, value: current };
}

/** How a value compares as text: strings as is, everything else as compact JSON. */
export function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function asNumber(text: string): number | undefined {
  const t = text.trim();
  if (!NUMBER.test(t)) return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
}

const INTEGER = /^[+-]?\d+$/;

/**
 * Both finite numbers -> numeric order (integers exactly, however many digits: a trace id
 * `12345678901234567890` is not equal to `12345678901234567891`), else string (code unit) order.
 */
export function compare(a: string, b: string): number {
  const x = asNumber(a);
  const y = asNumber(b);
  if (x !== undefined && y !== undefined) {
    const [ta, tb] = [a.trim(), b.trim()];
    if (INTEGER.test(ta) && INTEGER.test(tb) && (!Number.isSafeInteger(x) || !Number.isSafeInteger(y))) {
      const [p, q] = [BigInt(ta), BigInt(tb)];
      return p === q ? 0 : p < q ? -1 : 1;
    }
    return x === y ? 0 : x < y ? -1 : 1;
  }
  return a === b ? 0 : a < b ? -1 : 1;
}

const MISSING_SATISFIES = new Set(['neq', 'not-in', 'not-contain', 'not-isset']);

/** One rule against the facts. An unknown operator never matches (it is refused at save time). */
export function evaluateRule(rule: Rule, facts: AlarmFacts): boolean {
  const hit = lookup(facts, rule.field);
  if (!hit.found) return MISSING_SATISFIES.has(rule.operator);
  const value = asText(hit.value);
  const threshold = rule.threshold ?? '';
  switch (rule.operator) {
    case 'eq-self':
    case 'isset':
      return true;
    case 'not-isset':
      return false;
    case 'eq':
      return compare(value, threshold) === 0;
    case 'neq':
      return compare(value, threshold) !== 0;
    case 'gt':
      return compare(value, threshold) > 0;
    case 'gte':
      return compare(value, threshold) >= 0;
    case 'lt':
      return compare(value, threshold) < 0;
    case 'lte':
      return compare(value, threshold) <= 0;
    case 'in':
      return threshold.split('|').some((t) => compare(value, t) === 0);
    case 'not-in':
      return !threshold.split('|').some((t) => compare(value, t) === 0);
    case 'contain':
      return value.includes(threshold);
    case 'not-contain':
      return !value.includes(threshold);
    default:
      return false;
  }
}

/** All rules of a condition hold. A condition without rules matches nothing. */
export function matchesCondition(condition: Pick<Condition, 'rule'>, facts: AlarmFacts): boolean {
  return condition.rule.length > 0 && condition.rule.every((r) => evaluateRule(r, facts));
}

/** Index of the first matching condition, or -1. */
export function firstMatch(conditions: Pick<Condition, 'rule'>[] | undefined, facts: AlarmFacts): number {
  return (conditions ?? []).findIndex((c) => matchesCondition(c, facts));
}

/**
 * The compression token of a rule: `field#operator#threshold`; `eq-self` takes the alarm's actual
 * value as its threshold, so alarms group by that value.
 */
export function ruleToken(rule: Rule, facts: AlarmFacts): string {
  if (rule.operator === 'eq-self') {
    const hit = lookup(facts, rule.field);
    return `${rule.field}#eq-self#${hit.found ? asText(hit.value) : ''}`;
  }
  return `${rule.field}#${rule.operator}#${rule.threshold ?? ''}`;
}
