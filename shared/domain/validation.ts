import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { type FieldError, ValidationError } from './errors.ts';

/**
 * JSON Schema validation shared by every module. Schemas are compiled once per process (module
 * load); error objects are turned into `{field, message}` pairs with dotted field paths.
 */
const strict = new Ajv({ allErrors: true, strict: false, verbose: true });
/** Query strings and form bodies carry numbers as strings (behavior 1). */
const coercing = new Ajv({ allErrors: true, strict: false, verbose: true, coerceTypes: true });

export type Validator = (value: unknown) => void;

/** Every id the service accepts: a positive integer a JavaScript number holds exactly (behavior 1). */
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

function wrap(fn: ValidateFunction): Validator {
  return (value) => {
    if (!fn(value)) throw new ValidationError(toFieldErrors(fn.errors));
  };
}

/** Compile a schema for JSON input (types must match exactly). */
export function compileSchema(schema: object): Validator {
  return wrap(strict.compile(schema));
}

/** Compile a schema for query-string / form input (numeric strings become numbers). */
export function compileCoercingSchema(schema: object): Validator {
  return wrap(coercing.compile(schema));
}
