/**
 * `npm run gen:openapi` — writes shared/generated/openapi.json: the OpenAPI 3.1 document of every
 * deployed route of infra/definitions.ts (scripts/openapi/ builds it: the routes and what their
 * handlers declare, the response schemas from the types the handlers return, the refusals, the
 * assembly). GET /openapi.json and GET /docs serve that file. `--check` writes nothing and exits 1
 * when the committed file is not what would be written (scripts/openapi/document.test.ts checks the
 * same).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { buildOpenApi } from './openapi/document.ts';
import { responseSchemas } from './openapi/responses.ts';
import { OPENAPI_FILE, root, routeDocs, routeKey } from './openapi/routes.ts';

/** The text of shared/generated/openapi.json for the route table of today. */
export async function generateOpenApi(): Promise<string> {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const docs = await routeDocs();
  const typed = docs.filter((d) => !d.spec.rawResponse);
  const { data, components } = responseSchemas(
    root,
    typed.map((d) => ({ key: routeKey(d), file: join(root, d.route.handler) })),
  );
  return `${JSON.stringify(buildOpenApi(docs, { version, data, schemas: components }), null, 2)}\n`;
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
