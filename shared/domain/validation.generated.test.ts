/**
 * The files under shared/generated/validators against what they are made from: the schemas of the
 * route handlers and of the modules that validate (scripts/gen-validators.ts). Its own file: finding
 * the schemas imports every handler.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  generateFile,
  staleFiles,
  type ValidatorFile,
  validatorFiles,
} from '../../scripts/gen-validators.ts';
import { compileWithAjv } from './compile-schema.ts';
import { toFieldErrors } from './validation.ts';

const root = resolve(import.meta.dirname, '../..');
let files: ValidatorFile[];

beforeAll(async () => {
  files = await validatorFiles();
}, 60_000);

/** A seeded generator (mulberry32): the same inputs on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Schema = Record<string, unknown>;
const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A value shaped after `schema` that is often almost valid and wrong somewhere: wrong types, values
 * just out of range, missing and unknown fields, duplicates, numeric strings (for coercion).
 */
function sample(schema: unknown, rnd: () => number, depth = 0): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const junk = () => pick([null, 'x', '', '12', -1, 0, 1.5, 2 ** 60, true, [], {}, 'x'.repeat(2100)]);
  if (!isSchema(schema) || depth > 10 || rnd() < 0.05) return junk();
  const branches = [...((schema.anyOf as unknown[]) ?? []), ...((schema.oneOf as unknown[]) ?? [])];
  if (branches.length && rnd() < 0.8) return sample(pick(branches), rnd, depth + 1);
  if (Array.isArray(schema.enum)) return rnd() < 0.85 ? pick(schema.enum) : junk();
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = pick(types) ?? (schema.properties ? 'object' : schema.items ? 'array' : undefined);
  const num = (key: string, fallback: number) =>
    typeof schema[key] === 'number' ? (schema[key] as number) : fallback;
  switch (type) {
    case 'object': {
      // Properties of the conditional parts too (`then` of an enabled module), and `enable` mostly true.
      const parts = [schema, schema.then, ...((schema.allOf as unknown[]) ?? [])].filter(isSchema);
      const props = Object.assign({}, ...parts.map((p) => p.properties ?? {})) as Schema;
      const required = new Set(parts.flatMap((p) => (p.required as string[]) ?? []));
      const out: Schema = {};
      for (const [k, s] of Object.entries(props)) {
        if (rnd() < (required.has(k) ? 0.93 : 0.6)) {
          out[k] = k === 'enable' && rnd() < 0.8 ? true : sample(s, rnd, depth + 1);
        }
      }
      if (rnd() < 0.05) out[`extra_${Math.floor(rnd() * 3)}`] = 1;
      return out;
    }
    case 'array': {
      // One past maxItems only near the top: a nested list of 51 items in each of 21 items is slow.
      const n = pick([0, 1, 1, 2, 3, depth < 3 ? num('maxItems', 3) + 1 : 2]);
      const items = Array.from({ length: n }, () => sample(schema.items, rnd, depth + 1));
      if (items.length && rnd() < 0.15) items.push(items[0]);
      return items;
    }
    case 'string': {
      const max = num('maxLength', 50);
      return pick([
        '',
        'a',
        'disk usage',
        'https://example.com/hook',
        'http://x',
        'ftp://x',
        '13800138000',
        '1700000000',
        'f47ac10b-58cc-4372-a567-0e02b2c3d479',
        'x'.repeat(max),
        'x'.repeat(max + 1),
        7,
      ]);
    }
    case 'integer':
    case 'number': {
      const min = num('minimum', num('exclusiveMinimum', 0));
      const max = num('maximum', 100);
      return pick([min, min - 1, max, max + 1, 1, 2, 1.5, String(min + 1), 'x']);
    }
    case 'boolean':
      return pick([true, false, 'true', 1]);
    default:
      return junk();
  }
}

/** Keywords whose value holds subschemas (which may be a `$ref` to a shared subschema in the generated code). */
const APPLICATORS = new Set(['anyOf', 'oneOf', 'allOf', 'not', 'if', 'then', 'else']);

/**
 * What of an error can be compared between the two: not `schemaPath` nor the subschemas in an
 * applicator's `schema`, which shared subschemas change (nor `data`, the input at `instancePath`).
 */
const comparable = (errors: ErrorObject[] | null | undefined) =>
  (errors ?? []).map((e) => ({
    instancePath: e.instancePath,
    keyword: e.keyword,
    params: e.params,
    message: e.message,
    schema: APPLICATORS.has(e.keyword) ? undefined : e.schema,
    xMessage: (e.parentSchema as Schema | undefined)?.['x-message'],
  }));

describe('shared/generated/validators', () => {
  it('holds what `npm run gen:validators` writes from the schemas of today, and nothing else', () => {
    // Arrange
    const wanted = new Map(files.map((f) => [f.file, generateFile(f)]));

    // Act
    const stale = staleFiles(wanted);

    // Assert
    expect(files.length).toBeGreaterThan(40);
    expect(stale, 'stale validators: run npm run gen:validators').toEqual([]);
  });

  it('has, for random inputs to every schema, the result, errors and coercions of ajv compiling it', async () => {
    // Arrange
    const rnd = random(20240607);
    let failures = 0;
    let count = 0;
    /** Distinct data paths (array indexes as n) at which an error was found. */
    const paths = new Set<string>();

    for (const f of files) {
      const mod = (await import(pathToFileURL(join(root, f.file)).href)) as {
        standalone: () => Record<string, ValidateFunction>;
      };
      for (const { name, mode, schema } of f.validators) {
        const key = `${f.file} ${name}`;
        const generated = mod.standalone()[name];
        const compiled = compileWithAjv(mode, schema);
        count++;
        for (let i = 0; i < 400; i++) {
          const input = sample(schema, rnd);
          const [a, b] = [structuredClone(input), structuredClone(input)];

          // Act
          const okGenerated = generated(a);
          const okCompiled = compiled(b);

          // Assert (deep equality only on a difference: it would take most of the time)
          const got = { key, input, ok: okGenerated, data: a, errors: comparable(generated.errors) };
          const want = { key, input, ok: okCompiled, data: b, errors: comparable(compiled.errors) };
          if (JSON.stringify(got) !== JSON.stringify(want)) expect(got).toEqual(want);
          const fieldErrors = [toFieldErrors(generated.errors), toFieldErrors(compiled.errors)];
          if (JSON.stringify(fieldErrors[0]) !== JSON.stringify(fieldErrors[1])) {
            expect(fieldErrors[0]).toEqual(fieldErrors[1]);
          }
          for (const e of compiled.errors ?? []) paths.add(e.instancePath.replace(/\/\d+/g, '/n'));
          if (!okCompiled) failures++;
        }
      }
    }
    // The inputs reach both outcomes often (a test of the sampler itself).
    expect(failures).toBeGreaterThan(count * 100);
    expect(failures).toBeLessThan(count * 400);
    // ... and deep in the task configuration: an upgrade strategy's receiver's channels.
    expect(
      [...paths].filter((p) => p.startsWith('/upgrade/strategies/n/receiver/channels/')).length,
    ).toBeGreaterThan(3);
  });
});
