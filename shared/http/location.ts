/**
 * Where the deployment is, as a request reached it (the API documents' server URL, the console
 * session's cookie path and origin check).
 */
import type { HttpEvent } from './event.ts';

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
