import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { PayloadTooLargeError } from '../domain/errors.ts';

/** An HTTP request as API Gateway (HTTP API, payload 2.0) hands it to a function, and its answer. */
export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResult = APIGatewayProxyStructuredResultV2;

export const MAX_BODY_BYTES = 256 * 1024;

/** A request header by its lower-case name, whatever case the request spelt it in. */
export function header(event: HttpEvent, name: string): string | undefined {
  const headers = event.headers ?? {};
  return headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
}

/** The request body as text (413 above 256 KiB). */
export function rawBody(event: HttpEvent): string {
  if (!event.body) return '';
  const body = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) throw new PayloadTooLargeError();
  return body;
}
