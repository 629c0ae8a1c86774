/**
 * The routes the OpenAPI document describes, with what the generator reads of each: the handler's
 * spec (auth, input source, JSON Schema: what it declared to httpHandler), its doc comment (summary
 * and description) and its sample request (scripts/gen-events.ts, the examples).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type RouteDef, routes } from '../../infra/definitions.ts';
import type { HandlerSpec } from '../../shared/http/handler.ts';
import { type Sample, samples } from '../gen-events.ts';

export const root = resolve(import.meta.dirname, '../..');
export const OPENAPI_FILE = join(root, 'shared/generated/openapi.json');

/** One route as the generator hands it over. */
export interface RouteDoc {
  route: Pick<RouteDef, 'method' | 'path' | 'auth' | 'handler'>;
  spec: HandlerSpec;
  /** The handler file's doc comment (the block before `export const handler`), if any. */
  comment?: string;
  /** The route's sample request (scripts/gen-events.ts). */
  sample?: Sample;
}

export const routeKey = (doc: Pick<RouteDoc, 'route'>) => `${doc.route.method} ${doc.route.path}`;

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
