/**
 * Serving the API's own documents: `GET /openapi.json` (the generated OpenAPI document with this
 * deployment's server URL) and `GET /docs` (its reference page). Each answer is made once per server
 * URL and container.
 */
import type { HttpEvent, HttpResult } from './handler.ts';
import { renderReference } from './reference.ts';

type Json = Record<string, unknown>;

const HOST = /^[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?$/;
const BASE = /^(?:\/[A-Za-z0-9._~-]+)*$/;

/**
 * The deployment's base URL as this request reached it: `https://<API domain><mapping path>` (API
 * Gateway), `http://<host><BASE_PATH>` on the local runtime; undefined when the request does not tell
 * (the document's relative server then stands).
 */
export function serverUrl(event: HttpEvent, routePath: string): string | undefined {
  const ctx = event.requestContext;
  const host = ctx?.domainName;
  if (!host || !HOST.test(host)) return undefined;
  const local = ctx.apiId === 'local';
  const raw = event.rawPath ?? '';
  // A custom domain's API mapping keeps its path in rawPath; the local runtime strips BASE_PATH.
  const base = local
    ? (process.env.BASE_PATH ?? '').replace(/\/+$/, '')
    : raw.endsWith(routePath)
      ? raw.slice(0, raw.length - routePath.length)
      : '';
  if (!BASE.test(base)) return undefined;
  return `${local ? 'http' : 'https'}://${host}${base}`;
}

const COMMON_HEADERS = {
  'cache-control': 'public, max-age=300',
  'x-content-type-options': 'nosniff',
};

/** No script, no external resource, no framing: the page is text and inline CSS only. */
export const REFERENCE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const caches = new WeakMap<Json, Map<string, HttpResult>>();

/** The answer made for this document and key, made once (a few keys: the servers a container sees). */
function cached(doc: Json, key: string, make: () => HttpResult): HttpResult {
  let cache = caches.get(doc);
  if (!cache) {
    cache = new Map();
    caches.set(doc, cache);
  }
  let hit = cache.get(key);
  if (!hit) {
    if (cache.size >= 16) cache.clear();
    hit = make();
    cache.set(key, hit);
  }
  return hit;
}

function withServer(doc: Json, url: string | undefined): Json {
  return url ? { ...doc, servers: [{ url, description: 'This deployment.' }] } : doc;
}

/** `GET /openapi.json`. Public and read by other origins' API tools: any origin may fetch it. */
export function documentResponse(doc: Json, event: HttpEvent, routePath: string): HttpResult {
  const url = serverUrl(event, routePath);
  return cached(doc, `json ${url ?? ''}`, () => ({
    statusCode: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'access-control-allow-origin': '*',
      ...COMMON_HEADERS,
    },
    body: JSON.stringify(withServer(doc, url)),
  }));
}

/** `GET /docs`. */
export function referenceResponse(doc: Json, event: HttpEvent, routePath: string): HttpResult {
  const url = serverUrl(event, routePath);
  return cached(doc, `html ${url ?? ''}`, () => ({
    statusCode: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': REFERENCE_CSP,
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      ...COMMON_HEADERS,
    },
    body: renderReference(withServer(doc, url), url),
  }));
}
