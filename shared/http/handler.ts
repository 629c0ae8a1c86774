import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { type App, getApp } from '../domain/auth/apps.ts';
import { loadSealKey } from '../domain/auth/seal.ts';
import { authenticateApp, authenticateTask } from '../domain/auth/service.ts';
import { BadRequestError, PayloadTooLargeError } from '../domain/errors.ts';
import type { Task } from '../domain/tasks/model.ts';
import { compileCoercingSchema, compileSchema, type Validator } from '../domain/validation.ts';
import { isRawJson, parseJson as parseLossless } from '../json.ts';
import { logger } from '../log.ts';
import { count, flushMetrics } from '../metrics.ts';
import { errorResponse, okResponse } from './envelope.ts';

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResult = APIGatewayProxyStructuredResultV2;

/**
 * Where a handler's input comes from:
 * - `query`: the query string (GET);
 * - `json`: a JSON body;
 * - `form-or-query`: a form-encoded (or JSON) body merged over the query string (DELETE);
 * - `any-json`: a JSON body whatever the content type says (alarm senders: many existing shell
 *   clients post JSON with `curl -d`, which labels it form-encoded, or with no content type at all),
 *   parsed losslessly (numbers keep their digits: see shared/json.ts).
 * Numbers in the query string and form bodies are coerced (behavior 1); JSON keeps its types.
 */
export type InputSource = 'none' | 'query' | 'json' | 'any-json' | 'form-or-query';

export interface HandlerOptions {
  /**
   * `app`: application auth only; `app+task`: plus task auth on id/timestamp/sign; `none`: public;
   * `alarm`: an alarm intake (`/alarm/report`, the monitor adapters): no application auth, the use
   * case authenticates with the task token or the intake token (behavior 3.3); refusals are counted
   * in the `AlarmsRefused` metric.
   */
  auth: 'none' | 'app' | 'app+task' | 'alarm';
  input: InputSource;
  /** JSON Schema of the input (the task-auth parameters are checked by the factory). */
  schema?: object;
  /** `msg` of a successful response (default `success`). */
  successMessage?: string;
  /**
   * Answer refusals (every envelope answer but 413 and 5xx) with HTTP 200, the code travelling in
   * the envelope only: the alarm SDK endpoints (behavior 2), whose Go and PHP clients turn any
   * non-200 status into a misleading error.
   */
  refusalsAsHttp200?: boolean;
  /**
   * The handler body returns the HTTP result itself (status, headers, body) instead of the envelope's
   * `data`: the API's documents (`GET /openapi.json`, `GET /docs`). Errors still become envelopes.
   */
  rawResponse?: boolean;
}

/**
 * What a handler made by `httpHandler` declares about its input, read by the OpenAPI generator
 * (scripts/gen-openapi.ts) from the handler's read-only `spec` property.
 */
export interface HandlerSpec {
  auth: HandlerOptions['auth'];
  input: InputSource;
  schema?: object;
  successMessage?: string;
  refusalsAsHttp200: boolean;
  rawResponse: boolean;
}

export interface RequestContext {
  requestId: string;
  app?: App;
  /** The authenticated task (auth `app+task`). */
  task?: Task;
  event: HttpEvent;
}

export const MAX_BODY_BYTES = 256 * 1024;

/** The task-auth parameters (behavior 3.2), checked by the factory before the handler's schema. */
export const TASK_AUTH_SCHEMA = {
  type: 'object',
  required: ['id', 'timestamp', 'sign'],
  properties: {
    id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    timestamp: { type: ['integer', 'string'], pattern: '^[0-9]{1,12}$' },
    sign: { type: 'string', minLength: 1, maxLength: 128 },
  },
};
const taskAuthJson = compileSchema(TASK_AUTH_SCHEMA);
const taskAuthCoercing = compileCoercingSchema(TASK_AUTH_SCHEMA);

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

export function parseJson(body: string, lossless = false): Record<string, unknown> {
  if (body.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = lossless ? parseLossless(body) : JSON.parse(body);
  } catch {
    throw new BadRequestError('request body is not valid JSON');
  }
  // (a number kept as written is an object too, without being one)
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || isRawJson(parsed)) {
    throw new BadRequestError('request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** Reads the request input per its source; throws 400/413 on malformed bodies. */
export function readInput(event: HttpEvent, source: InputSource): Record<string, unknown> {
  const query = { ...(event.queryStringParameters ?? {}) } as Record<string, unknown>;
  if (source === 'none') return {};
  if (source === 'query') return query;
  const body = rawBody(event);
  if (source === 'any-json') return parseJson(body, true);
  const type = (header(event, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (source === 'json') {
    if (body.trim() !== '' && type !== 'application/json') {
      throw new BadRequestError('content type must be application/json');
    }
    return parseJson(body);
  }
  // form-or-query
  if (body.trim() === '') return query;
  if (type === 'application/x-www-form-urlencoded') {
    return { ...query, ...Object.fromEntries(new URLSearchParams(body)) };
  }
  if (type === 'application/json') return { ...query, ...parseJson(body) };
  throw new BadRequestError('content type must be application/x-www-form-urlencoded or application/json');
}

interface State {
  input: Record<string, unknown>;
  ctx: RequestContext;
}

/**
 * The one factory every HTTP endpoint is built with. It owns the middy chain: input parsing,
 * application auth, task auth, schema validation (ajv, compiled once), error mapping to the
 * envelope and JSON serialization. The handler body only calls one domain function. The returned
 * handler carries its options as `spec` (read-only; see HandlerSpec).
 */
export function httpHandler<TInput, TOutput>(
  options: HandlerOptions,
  fn: (input: TInput, ctx: RequestContext) => Promise<TOutput>,
) {
  const coerce = options.input === 'query' || options.input === 'form-or-query';
  const validate: Validator | undefined = options.schema
    ? coerce
      ? compileCoercingSchema(options.schema)
      : compileSchema(options.schema)
    : undefined;
  const validateTaskAuth = coerce ? taskAuthCoercing : taskAuthJson;

  const authAndValidate: middy.MiddlewareObj<HttpEvent, HttpResult, Error, Context & { state?: State }> = {
    before: async (request) => {
      logger.addContext(request.context);
      const event = request.event;
      const ctx: RequestContext = { requestId: request.context.awsRequestId, event };
      if (options.auth === 'app' || options.auth === 'app+task') {
        await loadSealKey();
        ctx.app = await authenticateApp(
          {
            appId: header(event, 'x-app-id'),
            timestamp: header(event, 'x-app-timestamp'),
            sign: header(event, 'x-app-sign'),
          },
          { getApp },
        );
      }
      const input = readInput(event, options.input);
      if (options.auth === 'app+task') {
        validateTaskAuth(input);
        ctx.task = await authenticateTask(
          input as unknown as { id: number; timestamp: string; sign: string },
        );
      }
      validate?.(input);
      request.context.state = { input, ctx };
    },
  };

  const handler = middy<HttpEvent, HttpResult, Error, Context & { state?: State }>()
    .use(authAndValidate)
    .use({
      after: async () => {
        flushMetrics();
      },
      onError: async (request) => {
        request.response = errorResponse(request.error, request.context.awsRequestId);
        const status = request.response.statusCode ?? 500;
        if (options.auth === 'alarm') {
          // Refused alarm reports by envelope code (the accepted ones are counted by the pipeline).
          const code = (JSON.parse(String(request.response.body)) as { code: number }).code;
          count('AlarmsRefused', { code });
        }
        flushMetrics();
        if (options.refusalsAsHttp200 && status < 500 && status !== 413) request.response.statusCode = 200;
      },
    })
    .handler(async (_event, context) => {
      const state = context.state as State;
      const out = await fn(state.input as TInput, state.ctx);
      return options.rawResponse ? (out as HttpResult) : okResponse(out, options.successMessage);
    });
  const spec: HandlerSpec = Object.freeze({
    auth: options.auth,
    input: options.input,
    ...(options.schema ? { schema: options.schema } : {}),
    ...(options.successMessage ? { successMessage: options.successMessage } : {}),
    refusalsAsHttp200: options.refusalsAsHttp200 === true,
    rawResponse: options.rawResponse === true,
  });
  return Object.defineProperty(handler, 'spec', {
    value: spec,
    enumerable: false,
    writable: false,
  }) as typeof handler & {
    readonly spec: HandlerSpec;
  };
}
