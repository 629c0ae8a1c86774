/**
 * Serving the web console (`GET /console`): the one HTML document scripts/build-console.ts builds,
 * with a strict Content-Security-Policy (the inline script and style allowed by their hashes only,
 * requests to this origin only, no framing, no plugins, no forms posting elsewhere) and the service's
 * clock, which the page signs its requests with.
 *
 * Where the document is: beside the function's bundle in AWS (the CDK bundling copies it there), in
 * shared/generated locally (`npm start` and the test setup build it).
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nowMs } from '../clock.ts';

/**
 * Where the page gets the service's clock: the build (scripts/build-console.ts) puts this in a meta
 * tag, the handler replaces it with the service's "now" (Unix ms) in every answer, so a browser on a
 * skewed clock still signs with valid timestamps.
 */
export const NOW_PLACEHOLDER = '__TOCSIN_NOW__';

const CANDIDATES = [
  // The Lambda bundle: index.mjs and console.html side by side.
  new URL('./console.html', import.meta.url),
  // The repository (local runtime, tests): shared/generated/console.html.
  new URL('../generated/console.html', import.meta.url),
];

interface Loaded {
  file: string;
  mtimeMs: number;
  html: string;
  csp: string;
}

let loaded: Loaded | undefined;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The text of every `<tag>…</tag>` element of the document (the build inlines one style and one script). */
function contentsOf(html: string, tag: 'script' | 'style'): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g');
  for (const m of html.matchAll(re)) out.push(m[1]);
  return out;
}

/**
 * The console's policy: nothing is allowed but its own inline script and style (by hash), calls to
 * the API on this origin, and data: images (the empty favicon). Trusted Types leave no sink for
 * injected markup; no framing (clickjacking), no <base>, no form submissions.
 */
export function consolePolicy(html: string): string {
  const scripts = contentsOf(html, 'script').map(sha256);
  const styles = contentsOf(html, 'style').map(sha256);
  return [
    "default-src 'none'",
    `script-src ${scripts.join(' ') || "'none'"}`,
    `style-src ${styles.join(' ') || "'none'"}`,
    "connect-src 'self'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; ');
}

/** The built document (re-read when the file changes, so a rebuild shows without restarting the stack). */
function load(): Loaded | undefined {
  for (const url of CANDIDATES) {
    const file = fileURLToPath(url);
    let mtimeMs: number;
    try {
      mtimeMs = statSync(file).mtimeMs;
    } catch {
      continue;
    }
    if (loaded?.file === file && loaded.mtimeMs === mtimeMs) return loaded;
    const html = readFileSync(file, 'utf8');
    loaded = { file, mtimeMs, html, csp: consolePolicy(html) };
    return loaded;
  }
  return undefined;
}

export interface ConsoleResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * `GET /console`. Not cached (the page carries the service's clock, `x-service-time` too, which the
 * page reads again when a signature was refused as expired).
 */
export function consoleResponse(): ConsoleResponse {
  const doc = load();
  const now = String(nowMs());
  const common = {
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-service-time': now,
  };
  if (!doc) {
    return {
      statusCode: 503,
      headers: { ...common, 'content-type': 'text/plain; charset=utf-8' },
      body: 'the console is not built: npm start builds it (or: node --import tsx scripts/build-console.ts)\n',
    };
  }
  return {
    statusCode: 200,
    headers: {
      ...common,
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': doc.csp,
      'x-frame-options': 'DENY',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-resource-policy': 'same-origin',
    },
    body: doc.html.replace(NOW_PLACEHOLDER, now),
  };
}
