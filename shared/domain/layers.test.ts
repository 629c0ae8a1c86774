import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { cruise, type ICruiseResult, type IFlattenedRuleSet } from 'dependency-cruiser';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * The import rules of `npm run lint:deps` (.dependency-cruiser.cjs) fail on the imports they forbid:
 * each case cruises a small tree made for it, with the project's own rules.
 */
const root = resolve(import.meta.dirname, '../..');
const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as {
  forbidden: IFlattenedRuleSet['forbidden'];
  LAYERS: string[];
};

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The violations `rule: from -> to` of a tree of files (path -> source). */
async function violationsOf(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tocsin-layers-'));
  made.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const { output } = await cruise(['shared'], {
    baseDir: dir,
    validate: true,
    ruleSet: { forbidden: config.forbidden },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
  });
  return (output as ICruiseResult).summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
}

describe('the domain import rules', () => {
  it('order every domain folder once, lowest first', () => {
    expect(new Set(config.LAYERS).size).toBe(config.LAYERS.length);
    expect(config.LAYERS.indexOf('directory')).toBeLessThan(config.LAYERS.indexOf('tasks'));
    expect(config.LAYERS.indexOf('tasks')).toBeLessThan(config.LAYERS.indexOf('alarms'));
    expect(config.LAYERS.indexOf('alarms')).toBeLessThan(config.LAYERS.indexOf('reads'));
    expect(config.LAYERS.at(-1)).toBe('replay');
  });

  it('accept imports downwards only', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/domain/tasks/model.ts': 'export const TASK = 1;\n',
      'shared/domain/alarms/pipeline.ts':
        "import { TASK } from '../tasks/model.ts';\nexport const run = () => TASK;\n",
    });
    // Assert
    expect(violations).toEqual([]);
  });

  it('fail on a two-way import between two folders', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/domain/tasks/model.ts':
        "import { run } from '../alarms/pipeline.ts';\nexport const TASK = run;\n",
      'shared/domain/alarms/pipeline.ts':
        "import { TASK } from '../tasks/model.ts';\nexport const run = () => TASK;\n",
    });
    // Assert
    expect(violations).toEqual([
      'domain-layers: shared/domain/tasks/model.ts -> shared/domain/alarms/pipeline.ts',
    ]);
  });

  it('fail on a loop round three folders', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/domain/directory/a.ts': "import { c } from '../workflows/c.ts';\nexport const a = () => c;\n",
      'shared/domain/tasks/b.ts': "import { a } from '../directory/a.ts';\nexport const b = () => a;\n",
      'shared/domain/workflows/c.ts': "import { b } from '../tasks/b.ts';\nexport const c = () => b;\n",
    });
    // Assert
    expect(violations).toEqual([
      'domain-layers: shared/domain/directory/a.ts -> shared/domain/workflows/c.ts',
    ]);
  });

  it('let a type-only import go upwards (it is erased before the code runs)', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/domain/tasks/model.ts':
        "import type { Run } from '../alarms/pipeline.ts';\nexport const TASK: Run | undefined = undefined;\n",
      'shared/domain/alarms/pipeline.ts':
        "import { TASK } from '../tasks/model.ts';\nexport type Run = () => unknown;\nexport const run: Run = () => TASK;\n",
    });
    // Assert
    expect(violations).toEqual([]);
  });

  it('fail on a folder that has no place in the layers', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/domain/newthing/a.ts': "import { b } from '../otherthing/b.ts';\nexport const a = () => b;\n",
      'shared/domain/otherthing/b.ts': "import { a } from '../newthing/a.ts';\nexport const b = () => a;\n",
    });
    // Assert
    expect(violations.sort()).toEqual([
      'domain-folder-listed: shared/domain/newthing/a.ts -> shared/domain/otherthing/b.ts',
      'domain-folder-listed: shared/domain/otherthing/b.ts -> shared/domain/newthing/a.ts',
    ]);
  });

  it('fail on domain code that imports the HTTP layer or a function', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/http/handler.ts': 'export const httpHandler = 1;\n',
      'functions/http/x.ts': 'export const handler = 1;\n',
      'shared/domain/tasks/service.ts':
        "import { httpHandler } from '../../http/handler.ts';\nimport { handler } from '../../../functions/http/x.ts';\nexport const s = [httpHandler, handler];\n",
    });
    // Assert
    expect(violations.sort()).toEqual([
      'domain-not-http: shared/domain/tasks/service.ts -> functions/http/x.ts',
      'domain-not-http: shared/domain/tasks/service.ts -> shared/http/handler.ts',
    ]);
  });
});
