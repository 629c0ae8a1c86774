import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `npm run lock:engines`: keeps `npm install` quiet on the Node.js that runs npm.
 *
 * npm checks every package's `engines.node` against the Node.js that runs npm itself (it takes
 * `process.version`; no setting names another version), not against the Node.js 24 the project runs
 * on (the pinned `node` devDependency, which every npm script uses). On a machine whose own Node.js is
 * older, that prints an `EBADENGINE` warning per package that needs a newer one, although nothing of
 * the project ever runs on that Node.js. So:
 *
 * - package.json's `devEngines.runtime` names the oldest Node.js that may run npm here (npm checks it
 *   instead of the project's own `engines`, and warns below it);
 * - the lock file records no `engines.node` range that this oldest Node.js fails (this script drops
 *   them; npm installs from the lock file, so it has nothing to warn about);
 * - shared/lock-engines.test.ts checks, instead of npm, that every installed package's real
 *   `engines.node` (from its own package.json) admits the pinned Node.js, and that the lock file is
 *   as this script leaves it (run it after adding or updating a dependency).
 */

export const projectRoot = resolve(import.meta.dirname, '..');

type Version = [number, number, number];
/** A version with missing parts (`18`, `6.9`, `14.x`): undefined where the part is open. */
type Partial = [number | undefined, number | undefined, number | undefined];

function parseVersion(text: string): Version {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text.trim());
  if (!m) throw new Error(`not a version: ${text}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

function parsePartial(text: string): Partial {
  const parts = text.replace(/^v/, '').split(/[-+]/)[0].split('.');
  const part = (i: number) =>
    parts[i] === undefined || /^[xX*]$/.test(parts[i]) ? undefined : Number(parts[i]);
  return [part(0), part(1), part(2)];
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

const floor = (p: Partial): Version => [p[0] ?? 0, p[1] ?? 0, p[2] ?? 0];

/** The first version above everything a partial version names (`1.2` -> 1.3.0, `1` -> 2.0.0). */
function ceiling(p: Partial): Version {
  if (p[0] === undefined) return [Number.MAX_SAFE_INTEGER, 0, 0];
  if (p[1] === undefined) return [p[0] + 1, 0, 0];
  if (p[2] === undefined) return [p[0], p[1] + 1, 0];
  return [p[0], p[1], p[2] + 1];
}

function comparatorHolds(v: Version, comparator: string): boolean {
  const m = /^(>=|<=|>|<|=|\^|~)?(.*)$/.exec(comparator);
  const op = m?.[1] ?? '';
  const p = parsePartial(m?.[2] ?? '');
  if (p[0] === undefined) return true; // *, x, empty: any version
  switch (op) {
    case '>=':
      return compare(v, floor(p)) >= 0;
    case '>':
      return p[2] === undefined ? compare(v, ceiling(p)) >= 0 : compare(v, floor(p)) > 0;
    case '<':
      return compare(v, floor(p)) < 0;
    case '<=':
      return compare(v, ceiling(p)) < 0;
    case '^': {
      const [major, minor = 0, patch = 0] = p;
      const upper: Version =
        major > 0 || p[1] === undefined
          ? [major + 1, 0, 0]
          : minor > 0 || p[2] === undefined
            ? [0, minor + 1, 0]
            : [0, 0, patch + 1];
      return compare(v, floor(p)) >= 0 && compare(v, upper) < 0;
    }
    case '~': {
      const upper: Version = p[1] === undefined ? [p[0] + 1, 0, 0] : [p[0], p[1] + 1, 0];
      return compare(v, floor(p)) >= 0 && compare(v, upper) < 0;
    }
    default:
      return compare(v, floor(p)) >= 0 && compare(v, ceiling(p)) < 0;
  }
}

/** Whether `version` (x.y.z) satisfies an npm `engines` range (`>=18`, `^20.19.0 || >=22.12.0`, ...). */
export function satisfies(version: string, range: string): boolean {
  const v = parseVersion(version);
  return range.split('||').some((alternative) => {
    const text = alternative.trim().replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1');
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text);
    if (hyphen) return comparatorHolds(v, `>=${hyphen[1]}`) && comparatorHolds(v, `<=${hyphen[2]}`);
    return text.split(/\s+/).every((c) => c === '' || comparatorHolds(v, c));
  });
}

interface PackageJson {
  devEngines?: { runtime?: { name?: string; version?: string } };
  devDependencies?: Record<string, string>;
  engines?: Record<string, string>;
}

// biome-ignore lint/suspicious/noExplicitAny: a lock file entry of any shape
type LockFile = { packages: Record<string, { engines?: any }> } & Record<string, unknown>;

/** The oldest Node.js that may run npm here: `devEngines.runtime.version` of package.json (`>=X.Y.Z`). */
export function oldestNpmNode(pkg: PackageJson): string {
  const runtime = pkg.devEngines?.runtime;
  const m = /^>=\s*(\d+\.\d+\.\d+)$/.exec(runtime?.version ?? '');
  if (runtime?.name !== 'node' || !m)
    throw new Error('package.json needs devEngines.runtime {name: "node", version: ">=X.Y.Z"}');
  return m[1];
}

/** The Node.js the project runs on: the pinned `node` devDependency. */
export function projectNode(pkg: PackageJson): string {
  const pinned = pkg.devDependencies?.node ?? '';
  if (!/^\d+\.\d+\.\d+$/.test(pinned))
    throw new Error('package.json must pin the node devDependency to x.y.z');
  return pinned;
}

/**
 * The lock file without the dependencies' `engines.node` ranges that `oldest` fails. The root entry
 * keeps its own (npm writes it from package.json, and checks `devEngines` instead when there is one).
 */
export function withoutFailingEngines(lock: LockFile, oldest: string): LockFile {
  const out = structuredClone(lock);
  for (const [path, entry] of Object.entries(out.packages)) {
    if (path === '') continue;
    const node = entry.engines?.node;
    if (typeof node !== 'string' || satisfies(oldest, node)) continue;
    delete entry.engines.node;
    if (Object.keys(entry.engines).length === 0) delete entry.engines;
  }
  return out;
}

export const lockText = (lock: LockFile): string => `${JSON.stringify(lock, null, 2)}\n`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as PackageJson;
  const file = join(projectRoot, 'package-lock.json');
  const before = readFileSync(file, 'utf8');
  const after = lockText(withoutFailingEngines(JSON.parse(before) as LockFile, oldestNpmNode(pkg)));
  if (after === before) console.log('package-lock.json: nothing to drop');
  else {
    writeFileSync(file, after);
    console.log(`package-lock.json: dropped the engines.node ranges Node.js ${oldestNpmNode(pkg)} fails`);
  }
}
