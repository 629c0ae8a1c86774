import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { AppError } from '../domain/errors.ts';
import { logger } from '../log.ts';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

export function envelope(
  status: number,
  code: number,
  msg: string,
  data: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: status,
    headers: { ...JSON_HEADERS, ...headers },
    body: JSON.stringify({ code, msg, data: data ?? {} }),
  };
}

export function okResponse(data: unknown, msg = 'success'): APIGatewayProxyStructuredResultV2 {
  return envelope(200, 0, msg, data === undefined || data === null ? {} : data);
}

/** A successful answer that is a document of its own, not an envelope (a calendar feed). */
export function textResponse(
  body: string,
  contentType: string,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return { statusCode: 200, headers: { 'content-type': contentType, ...headers }, body };
}

/** The one place errors become envelopes. Unexpected errors are logged and hidden. */
export function errorResponse(
  err: unknown,
  requestId: string | undefined,
): APIGatewayProxyStructuredResultV2 {
  if (err instanceof AppError) return envelope(err.status, err.code, err.message, err.data, err.headers);
  logger.error('unhandled error', { requestId, error: err as Error });
  return envelope(500, 500, 'internal error', {});
}
