/**
 * `npm run gen:validators` — writes the ajv standalone code of every schema the runtime validates
 * with, under shared/generated/validators/, one file per user, so that no schema is compiled at cold
 * start and a function's bundle carries its own validators only:
 *
 * - `routes/<handler under functions/>.ts`: a route's input validator (`validate`), from the schema its
 *   handler declares to httpHandler, in the mode of its input (query strings and form bodies coerce
 *   decimal strings to numbers). The handler imports it and hands it to httpHandler with the schema.
 * - `<name>.ts` for the other modules that validate (MODULE_VALIDATORS below): the task-auth parameters
 *   (shared/http/auth/task.ts), the task create body and configuration (tasks/rules.ts), the alarm
 *   report (alarms/report.ts), the directory import (directory/import.ts). Each is imported by that
 *   module only.
 *
 * Its top-level calls are marked `@__PURE__`, so that a bundle that imports a module but none of its
 * validators (a task route reaches tasks/rules.ts without creating a task) drops the file entirely.
 * Each file is self-contained (its own copy of the ajv runtime helpers it needs); subschemas repeated
 * within it get one function (shareRepeatedSubschemas). A file the sources import but that does not
 * exist yet (a new route) is first written as a stub, so that the handlers can be loaded to read their
 * schemas. Files of routes that no longer have a schema are removed. `--check` writes nothing and exits 1
 * when a file is not what would be written (the unit test shared/domain/validation.generated.test.ts
 * checks the same).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import { AJV_OPTIONS, numericFields, type ValidationMode } from '../shared/domain/validation.ts';

const root = resolve(import.meta.dirname, '..');
/** Where the generated files live, relative to the project root. */
export const GENERATED_DIR = 'shared/generated/validators';
const ROUTES_DIR = `${GENERATED_DIR}/routes`;

/** One validator of a generated file: the name it is exported as, its mode and schema. */
export interface GeneratedValidator {
  name: string;
  mode: ValidationMode;
  schema: object;
}

/** One generated file: its path (relative to the project root), what it is for, its validators. */
export interface ValidatorFile {
  file: string;
  /** The module that imports it (the handler of a route, or the module that validates). */
  user: string;
  validators: GeneratedValidator[];
}

/**
 * The modules other than route handlers that validate, each with its file and schemas (loaded when the
 * generator runs, once the files they import exist). A module that validates a schema of its own gets
 * an entry here and imports its file.
 */
const MODULE_VALIDATORS: {
  file: string;
  user: string;
  validators: () => Promise<GeneratedValidator[]>;
}[] = [
  {
    file: 'task-auth',
    user: 'shared/http/auth/task.ts',
    validators: async () => {
      const { TASK_AUTH_SCHEMA } = await import('../shared/http/auth/task-schema.ts');
      return [
        { name: 'validateTaskAuthJson', mode: 'json', schema: TASK_AUTH_SCHEMA },
        { name: 'validateTaskAuthQuery', mode: 'coercing', schema: TASK_AUTH_SCHEMA },
      ];
    },
  },
  {
    file: 'tasks',
    user: 'shared/domain/tasks/rules.ts',
    validators: async () => {
      const { createTaskSchema, taskConfigSchema } = await import('../shared/domain/tasks/schemas.ts');
      return [
        { name: 'validateCreateShape', mode: 'json', schema: createTaskSchema },
        { name: 'validateConfigShape', mode: 'json', schema: taskConfigSchema },
      ];
    },
  },
  {
    file: 'alarm-report',
    user: 'shared/domain/alarms/report.ts',
    validators: async () => {
      const { reportSchema } = await import('../shared/domain/alarms/report-schemas.ts');
      return [{ name: 'validateReport', mode: 'json', schema: reportSchema }];
    },
  },
  {
    file: 'directory-import',
    user: 'shared/domain/directory/import.ts',
    validators: async () => {
      const { directorySchema } = await import('../shared/domain/directory/schemas.ts');
      return [{ name: 'validateDirectory', mode: 'json', schema: directorySchema }];
    },
  },
];

/** Every module under functions/ (not the tests), relative to the project root. */
function functionModules(): string[] {
  return (readdirSync(join(root, 'functions'), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => join('functions', f).split('\\').join('/'))
    .sort();
}

/** The generated file of a route handler: `functions/http/x/y.ts` -> `shared/generated/validators/routes/http/x/y.ts`. */
export function routeValidatorFile(handler: string): string {
  return `${ROUTES_DIR}/${handler.replace(/^functions\//, '')}`;
}

/** A handler's input mode: query strings and form bodies coerce. */
const modeOf = (input: string): ValidationMode =>
  input === 'query' || input === 'form-or-query' ? 'coercing' : 'json';

/**
 * The files to generate, from the schemas of today: every module validator, and a route file for every
 * handler under functions/ that declares a schema.
 */
export async function validatorFiles(): Promise<ValidatorFile[]> {
  const files: ValidatorFile[] = [];
  for (const m of MODULE_VALIDATORS) {
    files.push({ file: `${GENERATED_DIR}/${m.file}.ts`, user: m.user, validators: await m.validators() });
  }
  for (const handler of functionModules()) {
    const mod = (await import(pathToFileURL(join(root, handler)).href)) as {
      handler?: { spec?: { schema?: object; input: string } };
    };
    const spec = mod.handler?.spec;
    if (!spec?.schema) continue;
    files.push({
      file: routeValidatorFile(handler),
      user: handler,
      validators: [{ name: 'validate', mode: modeOf(spec.input), schema: spec.schema }],
    });
  }
  return files;
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
 * a schema of its own: ajv then generates its code once instead of at every place (the task file is
 * a fifth of what it would be). Errors are unchanged: the same keywords fail at the same data paths,
 * and `parentSchema` is still the object holding the failed keyword, with its `x-message`. One
 * keyword's code looks into a subschema: `uniqueItems` compares scalar items through a map only when
 * it sees their `type` in `items` (its error then names the duplicates in the other order), so `items`
 * next to `uniqueItems` stays in place.
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
 * The ajv standalone code (CommonJS form) of validators of one mode, setting each validate function
 * on `exports` under its name, with its runtime `require`s turned into names the file imports.
 */
function modeCode(validators: GeneratedValidator[], mode: ValidationMode, runtime: Set<string>): string {
  const { roots, shared } = shareRepeatedSubschemas(validators.map((v) => v.schema as Schema));
  // inlineRefs: false, or ajv would copy the shared schemas' code back into every place.
  const ajv = new Ajv({ ...AJV_OPTIONS[mode], inlineRefs: false, code: { source: true, lines: true } });
  for (const [id, schema] of [...shared].sort(([a], [b]) => (a < b ? -1 : 1))) ajv.addSchema(schema, id);
  validators.forEach((v, i) => {
    ajv.addSchema(roots[i], v.name);
  });
  const code = standalone.default(ajv, Object.fromEntries(validators.map((v) => [v.name, v.name])));
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

/** The text of one generated file. */
export function generateFile(f: ValidatorFile): string {
  const runtime = new Set<string>();
  const modes = (['json', 'coercing'] as const).filter((m) => f.validators.some((v) => v.mode === m));
  const blocks = modes.map((mode) =>
    [
      `/** The ${mode} validators (${mode === 'coercing' ? 'query strings and form bodies: decimal strings become numbers' : 'JSON: types must match'}). */`,
      `const ${mode} = /* @__PURE__ */ (() => {`,
      '  const exports = {};',
      indent(
        modeCode(
          f.validators.filter((v) => v.mode === mode),
          mode,
          runtime,
        ),
        '  ',
      ),
      '  return exports;',
      '})();',
      '',
    ].join('\n'),
  );
  const validation = relative(dirname(f.file), 'shared/domain/validation.ts').split('\\').join('/');
  const names = [...runtime].sort();
  const exports = f.validators.map((v) => {
    const numeric = v.mode === 'coercing' ? numericFields(v.schema) : [];
    const args = numeric.length ? `, ${JSON.stringify(numeric)}` : '';
    return `export const ${v.name} = /* @__PURE__ */ validator(${v.mode}, ${JSON.stringify(v.name)}${args});`;
  });
  return [
    '// @ts-nocheck',
    '// Generated by `npm run gen:validators` (scripts/gen-validators.ts). Do not edit: a unit test fails',
    '// when this file is out of date. The ajv standalone validators that this module validates with:',
    `// ${f.user}`,
    "import type { ValidateFunction } from 'ajv';",
    ...names.map((name) => `import runtime_${name}_module from 'ajv/dist/runtime/${name}.js';`),
    `import { checked } from '${validation.startsWith('.') ? validation : `./${validation}`}';`,
    '',
    ...(names.length
      ? [
          "/** A CommonJS module's `default` export, whether the importer follows Node or Babel interop. */",
          'const defaultOf = (m) => m.default ?? m;',
          ...names.map(
            (name) =>
              `const runtime_${name} = { default: /* @__PURE__ */ defaultOf(runtime_${name}_module) };`,
          ),
          '',
        ]
      : []),
    ...blocks,
    "/** A validator of one mode's code (no property read in the pure calls below: a bundle drops the unused). */",
    'const validator = (mode, name, numeric) => checked(mode[name], numeric);',
    '',
    ...exports,
    '',
    '/** The validate functions themselves (for the test that compares them with ajv compiling the schemas). */',
    `export const standalone = (): Record<string, ValidateFunction> => ({ ${f.validators
      .map((v) => `${v.name}: ${v.mode}[${JSON.stringify(v.name)}]`)
      .join(', ')} });`,
    '',
  ].join('\n');
}

/** Every file under the generated directory, relative to the project root. */
function existingFiles(): string[] {
  const dir = join(root, GENERATED_DIR);
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `${GENERATED_DIR}/${f.split('\\').join('/')}`)
    .sort();
}

/**
 * Stubs for the generated files the sources import but that do not exist yet (a new route's, a new
 * module validator's): without them the handlers could not be loaded to read their schemas. Each
 * exports its names as undefined until the generator writes it.
 */
export async function writeStubs(): Promise<string[]> {
  const wanted = new Map<string, string[]>();
  for (const m of MODULE_VALIDATORS) {
    wanted.set(
      `${GENERATED_DIR}/${m.file}.ts`,
      (await m.validators()).map((v) => v.name),
    );
  }
  const routeImport = /#shared\/generated\/validators\/(routes\/[\w/.-]+\.ts)/g;
  for (const handler of functionModules()) {
    for (const m of readFileSync(join(root, handler), 'utf8').matchAll(routeImport)) {
      wanted.set(`${GENERATED_DIR}/${m[1]}`, ['validate']);
    }
  }
  const written: string[] = [];
  for (const [file, names] of wanted) {
    const path = join(root, file);
    if (existsSync(path)) continue;
    mkdirSync(dirname(path), { recursive: true });
    const exported = names.map((n) => `export const ${n} = undefined;\n`).join('');
    writeFileSync(
      path,
      `// @ts-nocheck\n// A stub until npm run gen:validators writes this file.\n${exported}`,
    );
    written.push(file);
  }
  return written;
}

/** What the generated directory should hold: each file's text, by path. */
export async function generateAll(): Promise<Map<string, string>> {
  const files = await validatorFiles();
  return new Map(files.map((f) => [f.file, generateFile(f)]));
}

/** The files that differ from what would be written (changed, missing or no longer made). */
export function staleFiles(wanted: Map<string, string>): string[] {
  const stale = [...wanted].filter(([file, text]) => {
    try {
      return readFileSync(join(root, file), 'utf8') !== text;
    } catch {
      return true;
    }
  });
  const extra = existingFiles().filter((f) => !wanted.has(f));
  return [...stale.map(([file]) => file), ...extra].sort();
}

if (import.meta.main) {
  const check = process.argv.includes('--check');
  if (!check) for (const f of await writeStubs()) console.log(`stub ${f}`);
  const wanted = await generateAll();
  const stale = staleFiles(wanted);
  if (stale.length === 0) console.log(`${GENERATED_DIR}: ${wanted.size} files, up to date`);
  else if (check) {
    console.error(`out of date: ${stale.join(', ')}: run npm run gen:validators`);
    process.exitCode = 1;
  } else {
    for (const file of stale) {
      const text = wanted.get(file);
      const path = join(root, file);
      if (text === undefined) rmSync(path);
      else {
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, text);
      }
      console.log(`${text === undefined ? 'removed' : 'wrote'} ${file}`);
    }
  }
  // Handler modules may hold timers or sockets open; the work is done.
  process.exit();
}
