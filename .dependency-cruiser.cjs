/**
 * Import rules of the domain code (`npm run lint:deps`; docs/architecture.md explains the layers).
 *
 * The folders under shared/domain form layers, lowest first: a folder may import at run time only the
 * folders listed before it, so no two folders import each other, directly or round a longer loop.
 * Type-only imports (`import type`) are erased before the code runs and are not counted. The files at
 * the root of shared/domain (errors, cursors, validation) sit below every folder. Domain code never
 * imports the HTTP layer, the Lambda functions, middy or the `aws-lambda` types.
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

const RUNTIME_ONLY = ['type-only', 'type-import'];
const folder = (names) => `^shared/domain/(${names.join('|')})/`;

const layerRules = LAYERS.slice(0, -1).map((name, i) => ({
  name: `domain-layers`,
  comment: `shared/domain/${name} sits below ${LAYERS.slice(i + 1).join(', ')}: it must not import them at run time (docs/architecture.md)`,
  severity: 'error',
  from: { path: folder([name]) },
  to: { path: folder(LAYERS.slice(i + 1)), dependencyTypesNot: RUNTIME_ONLY },
}));

module.exports = {
  forbidden: [
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
      name: 'domain-no-unresolved',
      comment: 'a domain import that cannot be resolved cannot be checked either',
      severity: 'error',
      from: { path: '^shared/domain/' },
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

// For docs and tests (not a configuration key, so not enumerable).
Object.defineProperty(module.exports, 'LAYERS', { value: LAYERS, enumerable: false });
