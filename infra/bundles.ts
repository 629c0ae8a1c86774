/**
 * The Lambda bundles as the CDK stack deploys them: every deployed entry (the routes of
 * definitions.ts, the `$default` 404 handler, the queue consumers and the scheduled runner) built by
 * esbuild with LAMBDA_BUNDLING (infra/constructs/service-functions.ts), turned into esbuild options
 * the way aws-lambda-nodejs turns them into its command line, and the console function's page beside
 * its bundle as its CDK bundling puts it there.
 *
 * Shared by the local runtime's bundle mode (`npm start -- --bundles`: shared/local runs each
 * function's bundle instead of its TypeScript source), the bundle test and `npm run bench:coldstart`.
 * All entries are built by one esbuild run (each output is the same file a build of that entry alone
 * makes: the runs share parsing, not code); `cachedBundles` keeps the result under
 * node_modules/.cache/tocsin/bundles and reuses it while no input changed.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { type BuildOptions, build, type Metafile, version as esbuildVersion } from 'esbuild';
import { buildConsole } from '../scripts/build-console.ts';
import { CONSOLE_ENTRY } from './constructs/console-bundling.ts';
import { deployedRoutes, NOT_FOUND_HANDLER } from './constructs/http-api.ts';
import { LAMBDA_BUNDLING } from './constructs/service-functions.ts';
import { routeEntry } from './definitions.ts';
import { deployCheck, queues, schedule } from './consumers.ts';

const PROJECT_ROOT = resolve(import.meta.dirname, '..');

export interface DeployedEntry {
  /** Handler file relative to the project root. */
  entry: string;
  /** What invokes it: an HTTP route (or `$default`), a queue, the schedule or a deployment. */
  label: string;
  http: boolean;
}

/** Every entry the stack deploys as a function, once each. */
export function deployedEntries(): DeployedEntry[] {
  const all: DeployedEntry[] = [
    ...deployedRoutes().map((r) => ({ entry: routeEntry(r), label: `${r.method} ${r.path}`, http: true })),
    { entry: NOT_FOUND_HANDLER, label: '$default', http: true },
    ...queues.map((q) => ({ entry: q.consumer, label: `queue ${q.name}`, http: false })),
    { entry: schedule.handler, label: 'schedule', http: false },
    { entry: deployCheck.handler, label: 'pre-traffic check', http: false },
  ];
  const seen = new Set<string>();
  return all.filter((e) => !seen.has(e.entry) && Boolean(seen.add(e.entry)));
}

/** Where an entry's bundle is in a bundle directory: `functions/http/health/get-health.ts` -> `functions/http/health/get-health/index.mjs`. */
export function bundlePath(entry: string): string {
  return `${entry.replace(/\.ts$/, '')}/index.mjs`;
}

/**
 * esbuild options equal to the command line aws-lambda-nodejs builds from LAMBDA_BUNDLING
 * (Bundling.buildEsbuildArgs of aws-cdk-lib 2.276), for all `entries` at once into `outdir`. Note that
 * it passes no `--charset`, so neither do we (esbuild's default ASCII output is what gets deployed).
 */
export function esbuildOptions(entries: string[], outdir: string): BuildOptions {
  const b = LAMBDA_BUNDLING;
  return {
    absWorkingDir: PROJECT_ROOT,
    entryPoints: entries.map((entry) => ({ in: entry, out: bundlePath(entry).replace(/\.mjs$/, '') })),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: b.format,
    target: b.target,
    minify: b.minify,
    sourcemap: b.sourceMap,
    sourcesContent: b.sourcesContent,
    external: b.externalModules,
    mainFields: b.mainFields,
    banner: { js: b.banner },
    tsconfig: join(PROJECT_ROOT, 'tsconfig.json'),
    metafile: true,
    logLevel: 'error',
  };
}

/** A directory of bundles: `bundles.json` maps each entry to its bundle, relative to the directory. */
export interface Bundles {
  dir: string;
  entries: Record<string, string>;
}

export const BUNDLES_MANIFEST = 'bundles.json';

/** Builds `entries` (default: every deployed one) into `outdir`, with the console's page; returns esbuild's metafile. */
export async function buildBundles(
  outdir: string,
  entries: string[] = deployedEntries().map((e) => e.entry),
): Promise<Bundles & { metafile: Metafile }> {
  const result = await build(esbuildOptions(entries, outdir));
  const bundles = { dir: outdir, entries: Object.fromEntries(entries.map((e) => [e, bundlePath(e)])) };
  if (entries.includes(CONSOLE_ENTRY)) await consolePage(outdir);
  writeFileSync(join(outdir, BUNDLES_MANIFEST), `${JSON.stringify(bundles.entries, null, 2)}\n`);
  return { ...bundles, metafile: result.metafile as Metafile };
}

/** The AWS SDK's packages (the SDK v3 clients and the libraries they are made of). */
const AWS_SDK = /(^|\/)node_modules\/(@aws-sdk|@smithy|@aws-crypto)\//;
/** The generated validators (npm run gen:validators). */
export const GENERATED_VALIDATORS = 'shared/generated/validators/';

/** What an entry's bundle is made of, from esbuild's metafile. */
export interface BundleParts {
  entry: string;
  /** Bytes of index.mjs, as deployed (minified, the AWS SDK in it). */
  bytes: number;
  /** Of which the AWS SDK's packages (@aws-sdk, @smithy, @aws-crypto). */
  sdkBytes: number;
  /** Of which the generated validators. */
  validatorBytes: number;
  /** The files esbuild put in it (relative to the project root), with their bytes in it. */
  inputs: Record<string, number>;
}

/** The parts of `entry`'s bundle in a metafile of buildBundles (or of a build with esbuildOptions). */
export function bundleParts(metafile: Metafile, entry: string): BundleParts {
  const output = Object.values(metafile.outputs).find((o) => o.entryPoint === entry);
  if (!output) throw new Error(`no bundle of ${entry} in the metafile`);
  const inputs: Record<string, number> = {};
  let sdkBytes = 0;
  let validatorBytes = 0;
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    inputs[input] = bytesInOutput;
    if (AWS_SDK.test(input)) sdkBytes += bytesInOutput;
    if (input.startsWith(GENERATED_VALIDATORS)) validatorBytes += bytesInOutput;
  }
  return { entry, bytes: output.bytes, sdkBytes, validatorBytes, inputs };
}

/** The metafile of every deployed entry's bundle, built in memory (nothing written). */
export async function bundleMetafile(
  entries: string[] = deployedEntries().map((e) => e.entry),
): Promise<Metafile> {
  const result = await build({ ...esbuildOptions(entries, join(PROJECT_ROOT, '.bundles')), write: false });
  return result.metafile as Metafile;
}

/** The console function's page beside its bundle (consoleCommandHooks does the same for the CDK). */
function consolePage(outdir: string) {
  return buildConsole(join(outdir, bundlePath(CONSOLE_ENTRY), '..', 'console.html'));
}

export const BUNDLE_CACHE = join(PROJECT_ROOT, 'node_modules/.cache/tocsin/bundles');

interface CacheRecord {
  /** Hash of the build settings and of every input file's content. */
  key: string;
  /** The bundle directory (under the cache), named by the key. */
  dir: string;
  /** The input files esbuild read (relative to the project root). */
  inputs: string[];
}

/** Hash of what decides the output: esbuild, its options, the entries and the content of every input. */
function cacheKey(entries: string[], inputs: string[]): string {
  const h = createHash('sha256');
  const options = { ...esbuildOptions(entries, '-'), absWorkingDir: undefined };
  h.update(JSON.stringify({ esbuildVersion, options, entries }));
  for (const file of [...inputs, 'tsconfig.json'].sort()) {
    h.update(`\0${file}\0`);
    try {
      h.update(readFileSync(join(PROJECT_ROOT, file)));
    } catch {
      h.update('(missing)');
    }
  }
  return h.digest('hex');
}

function readRecord(cache: string): CacheRecord | undefined {
  try {
    return JSON.parse(readFileSync(join(cache, 'current.json'), 'utf8')) as CacheRecord;
  } catch {
    return undefined;
  }
}

/** The cached bundles when they are those of the current sources, else undefined. */
function fresh(cache: string, entries: string[]): Bundles | undefined {
  const rec = readRecord(cache);
  if (!rec || !existsSync(join(cache, rec.dir, BUNDLES_MANIFEST))) return undefined;
  if (cacheKey(entries, rec.inputs) !== rec.key) return undefined;
  const dir = join(cache, rec.dir);
  const mapped = JSON.parse(readFileSync(join(dir, BUNDLES_MANIFEST), 'utf8')) as Record<string, string>;
  return { dir, entries: mapped };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Runs `fn` holding the cache's build lock (one build at a time across processes); a dead holder's lock is taken over. */
async function withLock<T>(cache: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(cache, 'build.lock');
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(lock, 'utf8') || 0);
      if (holder && holder !== process.pid && !alive(holder)) rmSync(lock, { force: true });
      else await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

export interface CachedBundles extends Bundles {
  /** Whether the bundles were already there (no esbuild run). */
  reused: boolean;
  ms: number;
}

/**
 * Every deployed entry's bundle, built into the cache or reused from it when no input changed (the
 * content of every file esbuild read, the options, esbuild's version). One build at a time: a second
 * process waits for the first and reuses what it built. The console's page is rebuilt each time
 * (cheap, and its sources are not esbuild inputs of the functions).
 */
export async function cachedBundles(cache: string = BUNDLE_CACHE): Promise<CachedBundles> {
  const started = performance.now();
  const entries = deployedEntries().map((e) => e.entry);
  mkdirSync(cache, { recursive: true });
  const done = (b: Bundles, reused: boolean): CachedBundles => ({
    ...b,
    reused,
    ms: performance.now() - started,
  });
  const found = fresh(cache, entries);
  if (found) {
    await consolePage(found.dir);
    return done(found, true);
  }
  return withLock(cache, async () => {
    const again = fresh(cache, entries);
    if (again) {
      await consolePage(again.dir);
      return done(again, true);
    }
    const tmp = join(cache, `tmp-${process.pid}-${randomUUID()}`);
    try {
      const built = await buildBundles(tmp, entries);
      const inputs = Object.keys(built.metafile.inputs).map((f) =>
        relative(PROJECT_ROOT, join(PROJECT_ROOT, f)),
      );
      const key = cacheKey(entries, inputs);
      const name = key.slice(0, 20);
      const dir = join(cache, name);
      // Bundles of the same key are the same files (a stack may be running them): keep them.
      if (!existsSync(join(dir, BUNDLES_MANIFEST))) {
        rmSync(dir, { recursive: true, force: true });
        renameSync(tmp, dir);
      }
      const record: CacheRecord = { key, dir: name, inputs };
      writeFileSync(join(cache, 'current.tmp'), JSON.stringify(record));
      renameSync(join(cache, 'current.tmp'), join(cache, 'current.json'));
      prune(cache, name);
      return done({ dir, entries: built.entries }, false);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
}

/**
 * Removes older bundle directories, keeping `current` and the one before it (a stack may still run
 * it), and what builds that died left behind.
 */
function prune(cache: string, current: string): void {
  const all = readdirSync(cache, { withFileTypes: true }).filter((d) => d.isDirectory());
  for (const d of all) {
    const pid = Number(/^tmp-(\d+)-/.exec(d.name)?.[1]);
    if (pid && !alive(pid)) rmSync(join(cache, d.name), { recursive: true, force: true });
  }
  const dirs = all
    .filter((d) => d.name !== current && !d.name.startsWith('tmp-'))
    .map((d) => ({ name: d.name, mtime: statSync(join(cache, d.name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const d of dirs.slice(1)) rmSync(join(cache, d.name), { recursive: true, force: true });
}
