/**
 * `npm run gen:openapi` — writes shared/generated/openapi.json: the OpenAPI 3.1 document of every
 * deployed route of infra/definitions.ts (shared/http/openapi.ts builds it).
 *
 * It imports each route's handler module and reads what the handler declared to the factory
 * (`handler.spec`: auth, input source, JSON Schema), the handler file's doc comment (summary and
 * description) and the route's sample request of scripts/gen-events.ts (the examples). `--check`
 * writes nothing and exits 1 when the committed file is not what would be written (the unit test
 * shared/http/openapi.test.ts checks the same).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { routes } from '../infra/definitions.ts';
import type { HandlerSpec } from '../shared/http/handler.ts';
import { buildOpenApi, type RouteDoc } from '../shared/http/openapi.ts';
import { samples } from './gen-events.ts';

const root = resolve(import.meta.dirname, '..');
export const OPENAPI_FILE = join(root, 'shared/generated/openapi.json');

/** The doc comment right before `export const handler` (text only, lines joined), if any. */
export function handlerComment(source: string): string | undefined {
  const at = source.search(/^export const handler\b/m);
  if (at < 0) return undefined;
  const m = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*$/.exec(source.slice(0, at));
  if (!m) return undefined;
  const text = m[1]
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s?/, '').trim())
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text || undefined;
}

/** Every deployed route with its handler's spec, doc comment and sample request. */
export async function routeDocs(): Promise<RouteDoc[]> {
  // GET /openapi.json and GET /docs import the document: without one, they could not be loaded.
  if (!existsSync(OPENAPI_FILE)) writeFileSync(OPENAPI_FILE, '{}\n');
  const docs: RouteDoc[] = [];
  for (const route of routes.filter((r) => !r.localOnly)) {
    const file = join(root, route.handler);
    const mod = (await import(pathToFileURL(file).href)) as { handler?: { spec?: HandlerSpec } };
    const spec = mod.handler?.spec;
    if (!spec) throw new Error(`${route.handler}: its handler is not made by httpHandler (no spec)`);
    docs.push({
      route,
      spec,
      comment: handlerComment(readFileSync(file, 'utf8')),
      sample: samples[`${route.method} ${route.path}`],
    });
  }
  return docs;
}

/** The text of shared/generated/openapi.json for the route table of today. */
export async function generateOpenApi(): Promise<string> {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  return `${JSON.stringify(buildOpenApi(await routeDocs(), { version }), null, 2)}\n`;
}

if (import.meta.main) {
  const text = await generateOpenApi();
  const check = process.argv.includes('--check');
  let current = '';
  try {
    current = readFileSync(OPENAPI_FILE, 'utf8');
  } catch {}
  const rel = relative(root, OPENAPI_FILE);
  if (current === text) console.log(`${rel} is up to date`);
  else if (check) {
    console.error(`${rel} is out of date: run npm run gen:openapi`);
    process.exitCode = 1;
  } else {
    writeFileSync(OPENAPI_FILE, text);
    console.log(`wrote ${rel} (${(text.length / 1024).toFixed(0)} KB)`);
  }
  // Handler modules may hold timers or sockets open; the work is done.
  process.exit();
}
