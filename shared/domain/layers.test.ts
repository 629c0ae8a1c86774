import { describe, expect, it } from 'vitest';
import { importRules as config, violationsOf } from '../test-import-rules.ts';

/**
 * The domain's import rules of `npm run lint:deps` (.dependency-cruiser.cjs) fail on the imports they
 * forbid: each case cruises a small tree made for it, with the project's own rules. The rules of the
 * floors and of import loops (which these trees break too): shared/floors.test.ts.
 */
const domainViolationsOf = async (files: Record<string, string>) =>
  (await violationsOf(files)).filter((v) => v.startsWith('domain-'));

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
    const violations = await domainViolationsOf({
      'shared/domain/tasks/model.ts': 'export const TASK = 1;\n',
      'shared/domain/alarms/pipeline.ts':
        "import { TASK } from '../tasks/model.ts';\nexport const run = () => TASK;\n",
    });
    // Assert
    expect(violations).toEqual([]);
  });

  it('fail on a two-way import between two folders', async () => {
    // Arrange / Act
    const violations = await domainViolationsOf({
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
    const violations = await domainViolationsOf({
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
    const violations = await domainViolationsOf({
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
    const violations = await domainViolationsOf({
      'shared/domain/newthing/a.ts': "import { b } from '../otherthing/b.ts';\nexport const a = () => b;\n",
      'shared/domain/otherthing/b.ts': "import { a } from '../newthing/a.ts';\nexport const b = () => a;\n",
    });
    // Assert
    expect(violations).toEqual([
      'domain-folder-listed: shared/domain/newthing/a.ts -> shared/domain/otherthing/b.ts',
      'domain-folder-listed: shared/domain/otherthing/b.ts -> shared/domain/newthing/a.ts',
    ]);
  });

  it('fail on domain code that imports the HTTP layer or a function', async () => {
    // Arrange / Act
    const violations = await domainViolationsOf({
      'shared/http/handler.ts': 'export const httpHandler = 1;\n',
      'functions/http/x.ts': 'export const handler = 1;\n',
      'shared/domain/tasks/service.ts':
        "import { httpHandler } from '../../http/handler.ts';\nimport { handler } from '../../../functions/http/x.ts';\nexport const s = [httpHandler, handler];\n",
    });
    // Assert
    expect(violations).toEqual([
      'domain-not-http: shared/domain/tasks/service.ts -> functions/http/x.ts',
      'domain-not-http: shared/domain/tasks/service.ts -> shared/http/handler.ts',
    ]);
  });
});
