import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { HttpEvent } from './event.ts';

/** One year, the subdomains too: a browser that once reached the API over HTTPS never tries HTTP. */
export const HSTS = 'max-age=31536000; includeSubDomains';

/** Whether the request reached the service over HTTPS: always on AWS (API Gateway), never locally. */
export const overHttps = (event: HttpEvent): boolean =>
  event.requestContext?.apiId !== undefined && event.requestContext.apiId !== 'local';

/**
 * The headers every answer of the API carries: `Cache-Control: no-store` (an answer is about one
 * caller's data; a route that wants its answer cached, like the API documents, sets its own),
 * `X-Content-Type-Options: nosniff`, and on AWS `Strict-Transport-Security` (the local runtime
 * serves plain HTTP, where the header means nothing and would pin `localhost` to HTTPS in a browser).
 */
export function securityHeaders(
  event: HttpEvent,
  result: APIGatewayProxyStructuredResultV2 | undefined,
): void {
  if (!result) return;
  const headers = { ...(result.headers ?? {}) };
  const has = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (!has('cache-control')) headers['cache-control'] = 'no-store';
  headers['x-content-type-options'] = 'nosniff';
  if (overHttps(event)) headers['strict-transport-security'] = HSTS;
  result.headers = headers;
}
