/**
 * Import rules of the whole repository (`npm run lint:deps`; docs/architecture.md explains them).
 *
 * The floors, lowest first:
 * - the contracts (shared/contracts): pure data both sides read (the table definition, metric names,
 *   the queues' messages and the nouns they share); they import nothing;
 * - the runtime (shared/ but shared/local, and functions/): what a Lambda function carries. It imports
 *   the contracts and never the deployment (infra/), the scripts, the benchmarks, the tests or the
 *   local runtime (shared/local): it gets its platform (SDK clients, per-container state) through the
 *   port in shared/platform.ts, whose local adapter the local runtime installs;
 * - the deployment (infra/), the local runtime (shared/local), the scripts, the benchmarks and the
 *   tests, above it. The deployment never loads the local runtime.
 * Test files (`*.test.ts`, `test-*.ts`) may import anything.
 *
 * Within the runtime, the folders under shared/domain form layers, lowest first: a folder may import at
 * run time only the folders listed before it, so no two folders import each other, directly or round a
 * longer loop. The files at the root of shared/domain (errors, cursors, validation) sit below every
 * folder. Domain code never imports the HTTP layer, the Lambda functions, middy or the `aws-lambda`
 * types.
 *
 * No module imports itself round a loop of imports, except the type-only loops listed in
 * TYPE_ONLY_CIRCLES. Type-only imports (`import type`) are erased before the code runs: the layer rules
 * do not count them.
 */

/** Lowest first. A new folder under shared/domain must be added here (the `domain-folder-listed` rule). */
const LAYERS = [
  'conditions',
  'due',
  'events',
  'auth',
  'channels',
  'directory',
  'signin',
  'schedules',
  'tasks',
  'webhooks',
  'notifications',
  'workflows',
  'claims',
  'alarms',
  'deliveries',
  'reads',
  'replay',
];

/**
 * Loops of imports allowed because at least one of their imports is type-only (so no loop runs), each
 * with its reason. The `no-circular-at-run-time` rule holds for them too.
 */
const TYPE_ONLY_CIRCLES = [
  // The alarm model holds an alarm's decision trace (`Why`), which the trace builds from the model's plan.
  ['shared/domain/alarms/model.ts', 'shared/domain/alarms/explain.ts'],
];

const RUNTIME_ONLY = ['type-only', 'type-import'];
const TEST_FILE = '(\\.test\\.tsx?|(^|/)test-[^/]+\\.ts)$';
const folder = (names) => `^shared/domain/(${names.join('|')})/`;
const exactly = (paths) => `^(${paths.map((p) => p.replaceAll('.', '\\.')).join('|')})$`;

const layerRules = LAYERS.slice(0, -1).map((name, i) => ({
  name: 'domain-layers',
  comment: `shared/domain/${name} sits below ${LAYERS.slice(i + 1).join(', ')}: it must not import them at run time (docs/architecture.md)`,
  severity: 'error',
  from: { path: folder([name]) },
  to: { path: folder(LAYERS.slice(i + 1)), dependencyTypesNot: RUNTIME_ONLY },
}));

const circleRules = [
  {
    name: 'no-circular',
    comment: 'a module that imports itself round a loop of imports (docs/architecture.md)',
    severity: 'error',
    from: { pathNot: TYPE_ONLY_CIRCLES.map(exactly) },
    to: { circular: true },
  },
  ...TYPE_ONLY_CIRCLES.map((files) => ({
    name: 'no-circular',
    comment: `a loop through ${files.join(' and ')} that leaves the loop listed in TYPE_ONLY_CIRCLES`,
    severity: 'error',
    from: { path: exactly(files) },
    to: { circular: true, via: { pathNot: exactly(files) } },
  })),
  {
    name: 'no-circular-at-run-time',
    comment:
      'a loop of run-time imports (a listed type-only loop too: one of its imports must stay type-only)',
    severity: 'error',
    from: {},
    to: { circular: true, viaOnly: { dependencyTypesNot: RUNTIME_ONLY } },
  },
];

module.exports = {
  forbidden: [
    {
      name: 'contracts-import-nothing',
      comment: 'shared/contracts is pure data: it imports nothing outside it (docs/architecture.md)',
      severity: 'error',
      from: { path: '^shared/contracts/' },
      to: { pathNot: '^shared/contracts/' },
    },
    {
      name: 'runtime-not-above-it',
      comment:
        'the runtime (shared/ but shared/local, and functions/) never imports the deployment, the local runtime, the scripts, the benchmarks or the tests: its platform comes through shared/platform.ts',
      severity: 'error',
      from: { path: '^(shared|functions)/', pathNot: ['^shared/local/', TEST_FILE] },
      to: { path: ['^infra/', '^shared/local/', '^scripts/', '^bench/', '^test/'] },
    },
    {
      name: 'deployment-not-local',
      comment: 'the deployment (infra/) never loads the local runtime, the benchmarks or the tests',
      severity: 'error',
      from: { path: '^infra/', pathNot: TEST_FILE },
      to: { path: ['^shared/local/', '^bench/', '^test/'], dependencyTypesNot: RUNTIME_ONLY },
    },
    ...circleRules,
    ...layerRules,
    {
      name: 'domain-folder-listed',
      comment: 'every folder under shared/domain has its place in LAYERS (.dependency-cruiser.cjs)',
      severity: 'error',
      from: { path: '^shared/domain/[^/]+/', pathNot: folder(LAYERS) },
      to: {},
    },
    {
      name: 'domain-root-below-folders',
      comment:
        'the files at the root of shared/domain (errors, cursor, validation) import no domain folder (their tests may)',
      severity: 'error',
      from: { path: '^shared/domain/[^/]+$', pathNot: '\\.test\\.ts$' },
      to: { path: '^shared/domain/[^/]+/', dependencyTypesNot: RUNTIME_ONLY },
    },
    {
      name: 'domain-not-http',
      comment: 'domain code never imports shared/http, the functions, middy or the aws-lambda types',
      severity: 'error',
      from: { path: '^shared/domain/' },
      to: {
        path: [
          '^shared/http/',
          '^functions/',
          '(^|/)node_modules/@middy/',
          '(^|/)node_modules/@types/aws-lambda/',
        ],
      },
    },
    {
      name: 'no-unresolved',
      comment: 'an import that cannot be resolved cannot be checked either',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};

// For docs and tests (not configuration keys, so not enumerable).
Object.defineProperty(module.exports, 'LAYERS', { value: LAYERS, enumerable: false });
Object.defineProperty(module.exports, 'TYPE_ONLY_CIRCLES', { value: TYPE_ONLY_CIRCLES, enumerable: false });
