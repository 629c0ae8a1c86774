import type { ErrorObject, Options, ValidateFunction } from 'ajv';
import { type FieldError, ValidationError } from './errors.ts';

/**
 * JSON Schema validation shared by every module; error objects are turned into `{field, message}`
 * pairs with dotted field paths.
 *
 * No schema is compiled in a function: `npm run gen:validators` writes ajv standalone code for every
 * schema the runtime validates with, one file per route and one per module that validates (under
 * shared/generated/validators, a unit test fails when one is stale), and each is imported by the one
 * module that uses it, so a function's bundle carries the validators of its own routes only. The code
 * here turns a generated validate function into a `Validator` (`checked`). Compiling a schema at run
 * time is for tests and the local tools only (compile-schema.ts, which no function may import).
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

/**
 * The number fields of an object schema's top level (not those a string may fill): a query or form
 * value of one must be a plain decimal.
 */
export type NumericFields = [name: string, type: 'integer' | 'number'][];

export function numericFields(schema: object): NumericFields {
  const props = (schema as { properties?: Record<string, { type?: string | string[] }> }).properties ?? {};
  const numeric: NumericFields = [];
  for (const [name, p] of Object.entries(props)) {
    const types = Array.isArray(p.type) ? p.type : [p.type];
    if (types.includes('string')) continue;
    if (types.includes('integer')) numeric.push([name, 'integer']);
    else if (types.includes('number')) numeric.push([name, 'number']);
  }
  return numeric;
}

/** The decimal forms a query or form value of a number field may take (ajv alone would take `0x1`, ` 1`, `1e3`). */
const DECIMAL = { integer: /^-?[0-9]{1,400}$/, number: /^-?[0-9]{1,400}(?:\.[0-9]{1,400})?$/ };

/**
 * A `Validator` of an ajv validate function: throws ValidationError (422) with the field errors.
 * `numeric` (query strings and form bodies, whose validate function coerces decimal strings to
 * numbers): those fields' string values must be plain decimals, else 422 `must be an integer` /
 * `must be a number` before ajv would coerce them.
 */
export function checked(validate: ValidateFunction, numeric?: NumericFields): Validator {
  return (value) => {
    if (numeric?.length && value && typeof value === 'object') {
      const errors = numeric.flatMap(([name, type]) => {
        const v = (value as Record<string, unknown>)[name];
        return typeof v === 'string' && !DECIMAL[type].test(v)
          ? [{ field: name, message: type === 'integer' ? 'must be an integer' : 'must be a number' }]
          : [];
      });
      if (errors.length) throw new ValidationError(errors);
    }
    if (!validate(value)) throw new ValidationError(toFieldErrors(validate.errors));
  };
}
