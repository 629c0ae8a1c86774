/**
 * Builds the web console (shared/console/web) into ONE self-contained HTML document: the Preact app
 * bundled and minified by esbuild, its JS and CSS inlined, nothing fetched but the API. One file, so
 * the deployment serves it with one route (`GET /console`, functions/http/console/get-console.ts).
 *
 * The document is not committed: `npm start`, the test setup and the console function's CDK bundling
 * build it (each calls `buildConsole`). Run by hand: `node --import tsx scripts/build-console.ts [OUT]`.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { NOW_PLACEHOLDER } from '../shared/console/serve.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const webDir = join(root, 'shared/console/web');

/** Where the local runtime and the tests find the document (gitignored). */
export const CONSOLE_HTML = join(root, 'shared/generated/console.html');

/** The budget of the whole document (JS, CSS and markup). */
const MAX_BYTES = 100 * 1024;

export interface BuiltConsole {
  file: string;
  bytes: number;
  ms: number;
}

/** The document's markup around the inlined style and script (both hashed into the CSP by the handler). */
function page(css: string, js: string): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<meta name="tocsin-now" content="${NOW_PLACEHOLDER}">`,
    '<title>tocsin console</title>',
    '<link rel="icon" href="data:,">',
    `<style>${css}</style>`,
    '</head>',
    '<body>',
    '<div id="app"><p class="boot">Loading the tocsin console…</p></div>',
    '<noscript>The tocsin console needs JavaScript.</noscript>',
    `<script>${js}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** Bundles the console and writes the document to `outFile` (atomically: a concurrent reader sees the old or the new one). */
export async function buildConsole(outFile: string = CONSOLE_HTML): Promise<BuiltConsole> {
  const started = performance.now();
  const result = await build({
    entryPoints: [join(webDir, 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome111', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(root, 'shared/console/tsconfig.json'),
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    outdir: 'out',
    logLevel: 'silent',
  });
  const js = result.outputFiles.find((f) => f.path.endsWith('.js'))?.text ?? '';
  const css = result.outputFiles.find((f) => f.path.endsWith('.css'))?.text ?? '';
  if (!js) throw new Error('build-console: esbuild produced no script');
  // The inlined code must not be able to end its own element (esbuild escapes these in strings).
  if (/<\/script/i.test(js)) throw new Error('build-console: the script contains "</script"');
  if (/<\/style/i.test(css)) throw new Error('build-console: the style contains "</style"');
  const html = page(css.trim(), js.trim());
  const bytes = Buffer.byteLength(html, 'utf8');
  if (bytes > MAX_BYTES) throw new Error(`build-console: ${bytes} bytes, over the ${MAX_BYTES}-byte budget`);
  const tmp = `${outFile}.${process.pid}.tmp`;
  writeFileSync(tmp, html);
  renameSync(tmp, outFile);
  return { file: outFile, bytes, ms: Math.round(performance.now() - started) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2] ? resolve(process.argv[2]) : CONSOLE_HTML;
  const built = await buildConsole(out);
  console.log(`console built: ${built.file} (${(built.bytes / 1024).toFixed(1)} KB, ${built.ms} ms)`);
}
