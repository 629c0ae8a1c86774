/**
 * JSON that travels through the service unchanged (API guide §7.3: what is accepted is processable,
 * losslessly). Alarm content is the client's JSON: a trace id `12345678901234567890`, `1e21` or
 * `1.0` must reach receivers with the digits the client wrote, keys may be empty or named
 * `__proto__`, strings may hold any Unicode.
 *
 * - `parseJson` keeps every number whose JavaScript value would print differently from its source
 *   text as a raw JSON value (`JSON.rawJSON`), which `JSON.stringify` writes back verbatim; other
 *   numbers stay plain numbers. Own `__proto__` keys stay data properties (JSON.parse semantics).
 * - `toWireJson` is `JSON.stringify` for queue message bodies: SQS refuses U+FFFE, U+FFFF (and the
 *   local emulator any character outside the BMP), so those are written as `\u` escapes, which any
 *   JSON parser reads back as the same characters.
 */

interface RawJson {
  readonly rawJSON: string;
}

interface JsonWithRaw {
  rawJSON(text: string): RawJson;
  isRawJSON(value: unknown): value is RawJson;
}

const J = JSON as unknown as JSON & JsonWithRaw;

/** Whether a value is a JSON object: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a value is a number kept as its source text. */
export function isRawJson(value: unknown): value is RawJson {
  return typeof value === 'object' && value !== null && J.isRawJSON(value);
}

/** Nesting beyond which textOf does not walk a value (far beyond any the service accepts). */
const TEXT_DEPTH = 256;

/**
 * A scalar as text, the way `String()` writes it, and a number kept as its source text as written
 * (`String()` throws on those: they have no prototype); objects and arrays as JSON, unless they nest
 * deeper than TEXT_DEPTH (writing those would exhaust the stack).
 */
export function textOf(value: unknown): string {
  if (isRawJson(value)) return value.rawJSON;
  if (typeof value !== 'object' || value === null) return String(value);
  return nestingDepth(value, TEXT_DEPTH) > TEXT_DEPTH ? '(nested too deep)' : JSON.stringify(value);
}

/** A number given as JSON text (e.g. `"12345678901234567890"`), kept exactly as written. */
export function rawNumber(text: string): RawJson {
  return J.rawJSON(text);
}

function keepDigits(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== 'number' || context?.source === undefined) return value;
  return Number.isFinite(value) && String(value) === context.source ? value : J.rawJSON(context.source);
}

/**
 * `JSON.parse` that keeps numbers exactly as written (see above). Throws SyntaxError like JSON.parse.
 * A reviver walks the value recursively: text nested thousands of levels deep exhausts the stack, and
 * is parsed without it (JSON.parse itself is iterative). Such a value is far beyond any nesting the
 * service accepts (`nestingDepth`), so its digits never matter.
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text, keepDigits as (this: unknown, key: string, value: unknown) => unknown);
  } catch (err) {
    if (err instanceof RangeError) return JSON.parse(text);
    throw err;
  }
}

const UNSAFE_ON_THE_WIRE = /[\uD800-\uDFFF\uFFFE\uFFFF]/g;
const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * JSON text for a queue message: only characters SQS (and its local emulator) accept. JSON.stringify
 * leaves such characters only inside strings, where a `\u` escape means the same character.
 */
export function toWireJson(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE_ON_THE_WIRE, unicodeEscape);
}

/**
 * How deeply a value nests objects and arrays (a scalar is 0, `{}` is 1, `{"a":[1]}` is 2), counted
 * without recursion so hostile input cannot exhaust the stack; stops counting past `limit`.
 */
export function nestingDepth(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null || isRawJson(v)) continue;
    const d = depth + 1;
    if (d > max) {
      max = d;
      if (max > limit) return max;
    }
    for (const child of Object.values(v)) stack.push([child, d]);
  }
  return max;
}

/** JSON with object keys sorted at every depth (arrays keep their order). */
export function stableStringify(value: unknown): string {
  if (isRawJson(value)) return value.rawJSON;
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? 'null' : stableStringify(v))).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableStringify((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
