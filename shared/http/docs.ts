/**
 * Serving the API's own documents: `GET /openapi.json` (the generated OpenAPI document with this
 * deployment's server URL) and `GET /docs` (its reference page). Each answer is made once per server
 * URL and container.
 */
import type { HttpEvent, HttpResult } from './handler.ts';
import { serverUrl } from './location.ts';
import { renderReference } from './reference.ts';

type Json = Record<string, unknown>;

export { serverUrl };

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
