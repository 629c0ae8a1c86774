import { describe, expect, it } from 'vitest';
import { importRules, violationsOf } from './test-import-rules.ts';

/**
 * The repository's import rules of `npm run lint:deps` (.dependency-cruiser.cjs): the floors (the
 * contracts, the runtime, the deployment) and import loops. Each case cruises a small tree made for
 * it, with the project's own rules. The domain's layers: shared/domain/layers.test.ts.
 */
const TYPE = 'export type T = { n: number };\n';
const VALUE = 'export const v = 1;\n';

describe('the contracts floor', () => {
  it('imports nothing outside shared/contracts', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/contracts/messages.ts':
        "import type { T } from './levels.ts';\nimport { v } from '../domain/tasks/model.ts';\nexport type M = T & { v: typeof v };\n",
      'shared/contracts/levels.ts': TYPE,
      'shared/domain/tasks/model.ts': VALUE,
    });
    // Assert
    expect(violations).toEqual([
      'contracts-import-nothing: shared/contracts/messages.ts -> shared/domain/tasks/model.ts',
    ]);
  });

  it('is imported by the runtime and the deployment alike', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/contracts/table.ts': VALUE,
      'shared/db/keys.ts': "import { v } from '../contracts/table.ts';\nexport const k = v;\n",
      'infra/constructs/data.ts':
        "import { v } from '../../shared/contracts/table.ts';\nexport const d = v;\n",
    });
    // Assert
    expect(violations).toEqual([]);
  });
});

describe('the runtime floor', () => {
  it('never imports the deployment, the local runtime, the scripts, the benchmarks or the tests', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'infra/definitions.ts': VALUE,
      'shared/local/call-record.ts': VALUE,
      'scripts/gen.ts': VALUE,
      'bench/ingest.ts': VALUE,
      'test/support/seed.ts': VALUE,
      'shared/metrics.ts': "import { v } from '../infra/definitions.ts';\nexport const m = v;\n",
      'shared/db/client.ts': "import type { T } from '../local/call-record.ts';\nexport const c: T[] = [];\n",
      'shared/domain/tasks/rules.ts': "import { v } from '../../../scripts/gen.ts';\nexport const r = v;\n",
      'functions/http/health.ts':
        "import { v } from '../../bench/ingest.ts';\nimport { v as w } from '../../test/support/seed.ts';\nexport const h = v + w;\n",
    });
    // Assert: type-only imports included (a type of the deployment is the deployment's)
    expect(violations).toEqual([
      'runtime-not-above-it: functions/http/health.ts -> bench/ingest.ts',
      'runtime-not-above-it: functions/http/health.ts -> test/support/seed.ts',
      'runtime-not-above-it: shared/db/client.ts -> shared/local/call-record.ts',
      'runtime-not-above-it: shared/domain/tasks/rules.ts -> scripts/gen.ts',
      'runtime-not-above-it: shared/metrics.ts -> infra/definitions.ts',
    ]);
  });

  it('lets its tests, the local runtime and the deployment import what they need', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'infra/definitions.ts': VALUE,
      'test/support/seed.ts': VALUE,
      'shared/local/stack.ts': "import { v } from '../../infra/definitions.ts';\nexport const s = v;\n",
      'shared/metrics.test.ts': "import { v } from './local/stack.ts';\nexport const t = v;\n",
      'shared/domain/alarms/test-pipeline.ts':
        "import { v } from '../../../test/support/seed.ts';\nexport const p = v;\n",
      'infra/privileges/check.ts':
        "import type { T } from '../../shared/local/call-record.ts';\nexport const c: T[] = [];\n",
      'shared/local/call-record.ts': TYPE,
    });
    // Assert
    expect(violations).toEqual([]);
  });
});

describe('the deployment', () => {
  it('never loads the local runtime, the benchmarks or the tests (their types it may name)', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/local/call-record.ts': `${TYPE}${VALUE}`,
      'infra/privileges/run.ts':
        "import { v } from '../../shared/local/call-record.ts';\nexport const r = v;\n",
      'infra/privileges/check.ts':
        "import type { T } from '../../shared/local/call-record.ts';\nexport const c: T[] = [];\n",
    });
    // Assert
    expect(violations).toEqual([
      'deployment-not-local: infra/privileges/run.ts -> shared/local/call-record.ts',
    ]);
  });
});

describe('import loops', () => {
  it('fail on a loop of run-time imports', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/http/handler.ts': "import { s } from './session.ts';\nexport const h = () => s;\n",
      'shared/http/session.ts': "import { h } from './handler.ts';\nexport const s = () => h;\n",
    });
    // Assert
    expect(violations).toEqual([
      'no-circular-at-run-time: shared/http/handler.ts -> shared/http/session.ts',
      'no-circular: shared/http/handler.ts -> shared/http/session.ts',
    ]);
  });

  it('fail on a loop with a type-only import that is not listed', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'shared/domain/deliveries/service.ts':
        "import type { List } from './responses.ts';\nexport type View = { id: string };\nexport const list = (): List => [];\n",
      'shared/domain/deliveries/responses.ts':
        "import type { View } from './service.ts';\nexport type List = View[];\n",
    });
    // Assert
    expect(violations).toEqual([
      'no-circular: shared/domain/deliveries/responses.ts -> shared/domain/deliveries/service.ts',
    ]);
  });

  it('accept a listed type-only loop, and nothing more', async () => {
    // Arrange: the listed loop; another loop through one of its files
    const [model, explain] = importRules.TYPE_ONLY_CIRCLES[0];
    const listed = {
      [model]:
        "import type { Why } from './explain.ts';\nexport type Plan = { why?: Why };\nexport const plan = 1;\n",
      [explain]:
        "import { plan } from './model.ts';\nexport type Why = { n: number };\nexport const trace = plan;\n",
    };
    const widened = {
      ...listed,
      [explain]: `import { plan } from './model.ts';\nimport { h } from './heartbeat.ts';\nexport type Why = { n: number };\nexport const trace = plan + h;\n`,
      'shared/domain/alarms/heartbeat.ts':
        "import { trace } from './explain.ts';\nexport const h = () => trace;\n",
    };

    // Act
    const accepted = await violationsOf(listed);
    const refused = await violationsOf(widened);

    // Assert
    expect(accepted).toEqual([]);
    expect(refused).toContain(`no-circular-at-run-time: ${explain} -> shared/domain/alarms/heartbeat.ts`);
    expect(refused.filter((v) => v.startsWith('no-circular:'))).not.toEqual([]);
  });

  it('fail on a listed loop once it runs', async () => {
    // Arrange / Act
    const [model, explain] = importRules.TYPE_ONLY_CIRCLES[0];
    const violations = await violationsOf({
      [model]: "import { why } from './explain.ts';\nexport const plan = () => why;\n",
      [explain]: "import { plan } from './model.ts';\nexport const why = () => plan;\n",
    });
    // Assert
    expect(violations).toEqual([`no-circular-at-run-time: ${explain} -> ${model}`]);
  });
});

describe('imports', () => {
  it('fail when they cannot be resolved', async () => {
    // Arrange / Act
    const violations = await violationsOf({
      'scripts/gen.ts': "import { v } from './missing.ts';\nexport const g = v;\n",
    });
    // Assert
    expect(violations).toEqual(['no-unresolved: scripts/gen.ts -> ./missing.ts']);
  });
});
