import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/** An HTTP request as API Gateway (HTTP API, payload 2.0) hands it to a function, and its answer. */
export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResult = APIGatewayProxyStructuredResultV2;

/** A request header by its lower-case name, whatever case the request spelt it in. */
export function header(event: HttpEvent, name: string): string | undefined {
  const headers = event.headers ?? {};
  return headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
}
