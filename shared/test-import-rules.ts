import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { cruise, type ICruiseResult, type IFlattenedRuleSet } from 'dependency-cruiser';
import { afterEach } from 'vitest';

/**
 * Test support for the import rules of `npm run lint:deps` (.dependency-cruiser.cjs): the project's
 * own rules, run over small trees made to break (or keep) them.
 */
const root = resolve(import.meta.dirname, '..');
export const importRules = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as {
  forbidden: IFlattenedRuleSet['forbidden'];
  LAYERS: string[];
  TYPE_ONLY_CIRCLES: string[][];
};

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The violations `rule: from -> to` of a tree of files (path -> source), sorted. */
export async function violationsOf(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tocsin-import-rules-'));
  made.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const tops = [...new Set(Object.keys(files).map((p) => p.split('/')[0]))];
  const { output } = await cruise(tops, {
    baseDir: dir,
    validate: true,
    ruleSet: { forbidden: importRules.forbidden },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
  });
  return (output as ICruiseResult).summary.violations
    .map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)
    .sort();
}
