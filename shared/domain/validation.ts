import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { validators as generated } from '../generated/validators.ts';
import { type FieldError, ValidationError } from './errors.ts';

/**
 * JSON Schema validation shared by every module; error objects are turned into `{field, message}`
 * pairs with dotted field paths.
 *
 * No schema is compiled at cold start: `npm run gen:validators` imports every Lambda entry point,
 * records the schemas they hand to `compileSchema`/`compileCoercingSchema` and writes ajv standalone
 * code for each to shared/generated/validators.ts (a unit test fails when that file is stale). A
 * validator is resolved on its first use: the generated function of its schema, or, for a schema the
 * generator has not seen (tests, or a schema changed without regenerating), ajv compiles it then,
 * ajv's compiler being loaded only at that moment.
 */
export type ValidationMode = 'json' | 'coercing';

/**
 * The ajv options of each mode, the generator's as well. `verbose` puts `parentSchema` on errors
 * (for `x-message`); query strings and form bodies carry numbers as strings (API guide §1.4).
 */
export const AJV_OPTIONS: Record<ValidationMode, Options> = {
  json: { allErrors: true, strict: false, verbose: true },
  coercing: { allErrors: true, strict: false, verbose: true, coerceTypes: true },
};

export type Validator = (value: unknown) => void;

/** Every id the service accepts: a positive integer a JavaScript number holds exactly (API guide §1.4). */
export const ID_SCHEMA = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;

function fieldOf(err: ErrorObject): string {
  const path = err.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (err.keyword === 'required')
    path.push(String((err.params as { missingProperty: string }).missingProperty));
  if (err.keyword === 'additionalProperties') {
    path.push(String((err.params as { additionalProperty: string }).additionalProperty));
  }
  return path.join('.') || '(body)';
}

/**
 * A schema may carry `x-message` with the text to use when one of its own keywords fails (e.g. a
 * pattern: `phone must be a mainland mobile number`).
 */
function messageOf(err: ErrorObject): string {
  const custom = (err.parentSchema as { 'x-message'?: string } | undefined)?.['x-message'];
  if (custom && err.keyword !== 'required') return custom;
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'required':
      return 'is required';
    case 'type':
      return `must be ${p.type === 'integer' ? 'an integer' : `a${/^[aeiou]/.test(String(p.type)) ? 'n' : ''} ${String(p.type).replace(',', ' or ')}`}`;
    case 'maxLength':
      return `must be at most ${p.limit} characters`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${p.limit} characters`;
    case 'maxItems':
      return `must have at most ${p.limit} items`;
    case 'minItems':
      return p.limit === 1 ? 'must not be empty' : `must have at least ${p.limit} items`;
    case 'uniqueItems':
      return 'must not contain duplicates';
    case 'minimum':
      return `must be at least ${p.limit}`;
    case 'maximum':
      return `must be at most ${p.limit}`;
    case 'exclusiveMinimum':
      return `must be greater than ${p.limit}`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).join(', ')}`;
    case 'const':
      return `must be ${String(p.allowedValue)}`;
    case 'pattern':
      return 'has an invalid format';
    case 'additionalProperties':
      return 'is not a known field';
    case 'minProperties':
      return 'must not be empty';
    default:
      return err.message ?? 'is invalid';
  }
}

/** Turns ajv errors into field errors, dropping the noise of failed `anyOf`/`oneOf` branches. */
export function toFieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const err of errors ?? []) {
    if (err.keyword === 'anyOf' || err.keyword === 'oneOf' || err.keyword === 'if') continue;
    const fe = { field: fieldOf(err), message: messageOf(err) };
    const k = `${fe.field}|${fe.message}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(fe);
    }
  }
  return out;
}

/** JSON text of a value with object keys sorted (JSON.stringify's rules otherwise). */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => stableJson(v ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.keys(value)
      .sort()
      .filter((k) => {
        const v = (value as Record<string, unknown>)[k];
        return v !== undefined && typeof v !== 'function' && typeof v !== 'symbol';
      })
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`);
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The name of a schema's generated validator: SHA-1 of the mode and the schema's stable JSON. */
export function validatorKey(mode: ValidationMode, schema: object): string {
  return createHash('sha1')
    .update(`${mode}\n${stableJson(schema)}`)
    .digest('hex');
}

type CompileListener = (mode: ValidationMode, schema: object) => void;
let listener: CompileListener | undefined;

/** The generator's hook: `listener` hears every schema compiled from now on (undefined: stop). */
export function onCompile(fn: CompileListener | undefined): void {
  listener = fn;
}

const ajvs: Partial<Record<ValidationMode, Ajv>> = {};

/** Ajv's compiler, for schemas without generated code (loaded on the first such schema only). */
export function compileWithAjv(mode: ValidationMode, schema: object): ValidateFunction {
  if (!ajvs[mode]) {
    // esbuild turns this `require` into its lazily evaluated copy of ajv; unbundled ESM has none.
    const { Ajv: AjvClass } = (
      typeof require === 'function' ? require('ajv') : createRequire(import.meta.url)('ajv')
    ) as { Ajv: typeof Ajv };
    ajvs[mode] = new AjvClass(AJV_OPTIONS[mode]);
  }
  return ajvs[mode].compile(schema);
}

function validatorFor(mode: ValidationMode, schema: object): Validator {
  listener?.(mode, schema);
  let fn: ValidateFunction | undefined;
  return (value) => {
    fn ??= generated[validatorKey(mode, schema)]?.() ?? compileWithAjv(mode, schema);
    if (!fn(value)) throw new ValidationError(toFieldErrors(fn.errors));
  };
}

/** A validator for JSON input (types must match exactly). */
export function compileSchema(schema: object): Validator {
  return validatorFor('json', schema);
}

/** The decimal forms a query or form value of a number field may take (ajv alone would take `0x1`, ` 1`, `1e3`). */
const DECIMAL = { integer: /^-?[0-9]{1,400}$/, number: /^-?[0-9]{1,400}(?:\.[0-9]{1,400})?$/ };

/**
 * The number fields of an object schema whose value is a string that is no plain decimal: such a
 * value is refused (422 `must be an integer` / `must be a number`) before ajv would coerce it.
 */
function strictNumbers(schema: object): (value: unknown) => void {
  const props = (schema as { properties?: Record<string, { type?: string | string[] }> }).properties ?? {};
  const numeric: [string, 'integer' | 'number'][] = [];
  for (const [name, p] of Object.entries(props)) {
    const types = Array.isArray(p.type) ? p.type : [p.type];
    if (types.includes('string')) continue;
    if (types.includes('integer')) numeric.push([name, 'integer']);
    else if (types.includes('number')) numeric.push([name, 'number']);
  }
  return (value) => {
    if (!value || typeof value !== 'object') return;
    const errors = numeric.flatMap(([name, type]) => {
      const v = (value as Record<string, unknown>)[name];
      return typeof v === 'string' && !DECIMAL[type].test(v)
        ? [{ field: name, message: type === 'integer' ? 'must be an integer' : 'must be a number' }]
        : [];
    });
    if (errors.length) throw new ValidationError(errors);
  };
}

/** A validator for query-string / form input (decimal strings become numbers; `0x1` is refused). */
export function compileCoercingSchema(schema: object): Validator {
  const check = strictNumbers(schema);
  const validate = validatorFor('coercing', schema);
  return (value) => {
    check(value);
    validate(value);
  };
}
