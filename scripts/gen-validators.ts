/**
 * `npm run gen:validators` — writes shared/generated/validators.ts: ajv standalone code for every
 * schema a Lambda entry point validates with, so that no schema is compiled at cold start.
 *
 * It imports every entry (the route table, queue consumers and scheduled runner of
 * infra/definitions.ts, and every module under functions/) with a listener on
 * `compileSchema`/`compileCoercingSchema` (all validators are made at module load, by the handler
 * factory or the domain modules), then generates the code of each distinct (mode, schema) with the
 * ajv options of shared/domain/validation.ts, keyed by `validatorKey(mode, schema)`. Subschemas that
 * occur more than once get one function (see shareRepeatedSubschemas). Every bundle carries the file
 * (about 150 KB minified) but evaluates nothing of it at import: the code of a mode's validators
 * runs on the first validation in that mode (a factory per mode, since they share functions).
 * `--check` writes nothing and exits 1 when the committed file is not what would be written (the unit
 * test shared/domain/validation.generated.test.ts checks the same).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import { routes } from '../infra/definitions.ts';
import { queues, schedule } from '../infra/consumers.ts';
import { AJV_OPTIONS, onCompile, type ValidationMode, validatorKey } from '../shared/domain/validation.ts';

const root = resolve(import.meta.dirname, '..');
export const GENERATED_FILE = join(root, 'shared/generated/validators.ts');

/** Every module a Lambda (or the local runtime) loads as its handler, relative to the project root. */
export function entryModules(): string[] {
  const underFunctions = (readdirSync(join(root, 'functions'), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => join('functions', f));
  const declared = [...routes.map((r) => r.handler), ...queues.map((q) => q.consumer), schedule.handler];
  return [...new Set([...declared, ...underFunctions].map((f) => relative(root, join(root, f))))].sort();
}

export type CollectedSchemas = Map<string, { mode: ValidationMode; schema: object }>;

/**
 * The schemas the entry modules compile, by key. Only the first call in a process finds them all
 * (modules are evaluated once).
 */
export async function collectSchemas(): Promise<CollectedSchemas> {
  const found: CollectedSchemas = new Map();
  onCompile((mode, schema) => found.set(validatorKey(mode, schema), { mode, schema }));
  try {
    for (const entry of entryModules()) await import(pathToFileURL(join(root, entry)).href);
  } finally {
    onCompile(undefined);
  }
  return found;
}

/** A short description of a schema for the generated file's comments: its top-level properties. */
function describe(schema: object): string {
  const props = Object.keys((schema as { properties?: object }).properties ?? {});
  const text = props.length ? `{${props.join(', ')}}` : JSON.stringify(schema);
  return text.length > 90 ? `${text.slice(0, 87)}...` : text;
}

type Schema = Record<string, unknown>;
const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Keywords whose value is a schema, an array of schemas, or a map of names to schemas. */
const ONE = [
  'items',
  'additionalItems',
  'additionalProperties',
  'contains',
  'propertyNames',
  'if',
  'then',
  'else',
  'not',
];
const MANY = ['allOf', 'anyOf', 'oneOf', 'items', 'prefixItems'];
const MAP = ['properties', 'patternProperties', 'dependentSchemas', 'dependencies', 'definitions', '$defs'];

/** `schema` with `f` applied to each of its direct subschemas (and the keyword holding it). */
function mapSubschemas(schema: Schema, f: (sub: Schema, keyword: string) => unknown): Schema {
  const out: Schema = { ...schema };
  for (const k of ONE) if (isSchema(schema[k])) out[k] = f(schema[k], k);
  for (const k of MANY) {
    if (Array.isArray(schema[k])) out[k] = (schema[k] as unknown[]).map((s) => (isSchema(s) ? f(s, k) : s));
  }
  for (const k of MAP) {
    if (!isSchema(schema[k])) continue;
    out[k] = Object.fromEntries(Object.entries(schema[k]).map(([n, s]) => [n, isSchema(s) ? f(s, k) : s]));
  }
  return out;
}

/** Subschemas found more than once and at least this long (JSON) get one validate function. */
const SHARED_MIN_CHARS = 20;

/**
 * The schemas of one mode rewritten so that every subschema they contain more than once (the
 * channels of a receiver, the task configuration inside the create body, an id, ...) is a `$ref` to
 * a schema of its own: ajv then generates its code once instead of at every place (the generated
 * file is 0.23 MB instead of 1.07 MB, 150 KB instead of 800 KB minified). Errors are unchanged: the same keywords fail at the same data paths, and
 * `parentSchema` is still the object holding the failed keyword, with its `x-message`. One keyword's
 * code looks into a subschema: `uniqueItems` compares scalar items through a map only when it sees
 * their `type` in `items` (its error then names the duplicates in the other order), so `items` next
 * to `uniqueItems` stays in place.
 */
function shareRepeatedSubschemas(roots: Schema[]): { roots: Schema[]; shared: Map<string, Schema> } {
  const seen = new Map<string, number>();
  const count = (s: Schema) => {
    const json = JSON.stringify(s);
    seen.set(json, (seen.get(json) ?? 0) + 1);
    mapSubschemas(s, (sub) => count(sub));
  };
  for (const root of roots) mapSubschemas(root, (sub) => count(sub));
  const ids = new Map<string, string>();
  for (const [json, n] of seen) {
    if (n > 1 && json.length >= SHARED_MIN_CHARS) {
      ids.set(json, `shared_${createHash('sha1').update(json).digest('hex').slice(0, 12)}`);
    }
  }
  const shared = new Map<string, Schema>();
  const rewrite = (s: Schema, inPlace: boolean): Schema => {
    const id = inPlace ? undefined : ids.get(JSON.stringify(s));
    if (id) {
      if (!shared.has(id)) shared.set(id, rewrite(s, true));
      return { $ref: id };
    }
    return mapSubschemas(s, (sub, keyword) => rewrite(sub, keyword === 'items' && s.uniqueItems === true));
  };
  return { roots: roots.map((r) => rewrite(r, true)), shared };
}

const RUNTIME = /require\("ajv\/dist\/runtime\/(\w+)"\)/g;

/**
 * The ajv standalone module (CommonJS form) of a mode's schemas, exporting each validate function
 * under its key, with its runtime `require`s turned into names the generated file imports.
 */
function modeModule(mode: ValidationMode, schemas: [string, object][], runtime: Set<string>): string {
  const { roots, shared } = shareRepeatedSubschemas(schemas.map(([, s]) => s as Schema));
  // inlineRefs: false, or ajv would copy the shared schemas' code back into every place.
  const ajv = new Ajv({ ...AJV_OPTIONS[mode], inlineRefs: false, code: { source: true, lines: true } });
  for (const [id, schema] of [...shared].sort(([a], [b]) => (a < b ? -1 : 1))) ajv.addSchema(schema, id);
  schemas.forEach(([key], i) => {
    ajv.addSchema(roots[i], key);
  });
  const code = standalone.default(ajv, Object.fromEntries(schemas.map(([key]) => [key, key])));
  const body = code.replace(/^"use strict";\n/, '').replace(RUNTIME, (_: string, name: string) => {
    runtime.add(name);
    return `runtime_${name}`;
  });
  if (/\brequire\(/.test(body)) throw new Error(`standalone code requires a module: ${body}`);
  return body;
}

const indent = (text: string, pad: string) =>
  text
    .split('\n')
    .map((line) => (line ? pad + line : line))
    .join('\n');

/** The text of shared/generated/validators.ts for the schemas the entry modules compile today. */
export async function generateValidators(schemas?: CollectedSchemas): Promise<string> {
  const all = [...(schemas ?? (await collectSchemas()))].sort(([a], [b]) => (a < b ? -1 : 1));
  const runtime = new Set<string>();
  const modes = (['json', 'coercing'] as const).filter((m) => all.some(([, v]) => v.mode === m));
  const modules = modes.map((mode) => {
    const schemas = all
      .filter(([, v]) => v.mode === mode)
      .map(([key, v]): [string, object] => [key, v.schema]);
    return [
      `/** The ${mode} validators, evaluated on the first use of one of them. */`,
      `const ${mode} = once(() => {`,
      '  const exports = {};',
      indent(modeModule(mode, schemas, runtime), '  '),
      '  return exports;',
      '});',
      '',
    ].join('\n');
  });
  const entries = all.map(
    ([key, { mode, schema }]) => `  // ${mode} ${describe(schema)}\n  '${key}': () => ${mode}()['${key}'],`,
  );
  const names = [...runtime].sort();
  return [
    '// @ts-nocheck',
    '// Generated by `npm run gen:validators` (scripts/gen-validators.ts): ajv standalone validators of',
    '// the schemas the Lambda entry points compile, keyed by validatorKey(mode, schema) of',
    '// shared/domain/validation.ts. Do not edit; a unit test fails when this file is out of date.',
    "import type { ValidateFunction } from 'ajv';",
    ...names.map((name) => `import runtime_${name}_module from 'ajv/dist/runtime/${name}.js';`),
    '',
    "/** A CommonJS module's `default` export, whether the importer follows Node or Babel interop. */",
    'const defaultOf = (m) => m.default ?? m;',
    ...names.map((name) => `const runtime_${name} = { default: defaultOf(runtime_${name}_module) };`),
    'const once = (make) => {',
    '  let made;',
    '  return () => (made ??= make());',
    '};',
    '',
    ...modules,
    'export const validators: Record<string, () => ValidateFunction> = {',
    ...entries,
    '};',
    '',
  ].join('\n');
}

if (import.meta.main) {
  const text = await generateValidators();
  const check = process.argv.includes('--check');
  let current = '';
  try {
    current = readFileSync(GENERATED_FILE, 'utf8');
  } catch {}
  const rel = relative(root, GENERATED_FILE);
  if (current === text) console.log(`${rel} is up to date`);
  else if (check) {
    console.error(`${rel} is out of date: run npm run gen:validators`);
    process.exitCode = 1;
  } else {
    writeFileSync(GENERATED_FILE, text);
    console.log(`wrote ${rel} (${(text.length / 1024).toFixed(0)} KB)`);
  }
  // Entry modules may hold timers or sockets open; the work is done.
  process.exit();
}
