import { Ajv, type ValidateFunction } from 'ajv';
import { AJV_OPTIONS, checked, numericFields, type ValidationMode, type Validator } from './validation.ts';

/**
 * Schemas compiled by ajv at run time, with the options of the generated validators: for the tests,
 * the local runtime's own routes and the command-line tools. No function imports this module
 * (`npm run lint:deps`, the `runtime-no-schema-compiler` rule): their validators are generated
 * (`npm run gen:validators`), so ajv's compiler is in no bundle.
 */
const ajvs: Partial<Record<ValidationMode, Ajv>> = {};

/** Ajv's validate function of `schema` in a mode. */
export function compileWithAjv(mode: ValidationMode, schema: object): ValidateFunction {
  ajvs[mode] ??= new Ajv(AJV_OPTIONS[mode]);
  return ajvs[mode].compile(schema);
}

/** A validator for JSON input (types must match exactly). */
export function compileSchema(schema: object): Validator {
  return checked(compileWithAjv('json', schema));
}

/** A validator for query-string / form input (decimal strings become numbers; `0x1` is refused). */
export function compileCoercingSchema(schema: object): Validator {
  return checked(compileWithAjv('coercing', schema), numericFields(schema));
}
