import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { App, Grant } from '../domain/auth/apps.ts';
import { loadSealKey } from '../domain/auth/seal.ts';
import { authenticateTask } from '../domain/tasks/authenticate.ts';
import { config } from '../config/env.ts';
import type { SignedInPerson } from '../domain/auth/sessions.ts';
import { getUser } from '../domain/directory/repository.ts';
import { BadRequestError, NotFoundError } from '../domain/errors.ts';
import { OPERATOR } from '../domain/tasks/access.ts';
import type { Task } from '../domain/tasks/model.ts';
import { compileCoercingSchema, compileSchema, type Validator } from '../domain/validation.ts';
import { isRawJson, parseJson as parseLossless } from '../json.ts';
import { logger } from '../log.ts';
import { count, countByVersion, flushMetrics } from '../metrics.ts';
import { errorResponse, okResponse } from './envelope.ts';
import { type HttpEvent, type HttpResult, header, rawBody } from './event.ts';
import { actAs, authenticateRequestApp, requireGrant } from './app-auth.ts';
import { securityHeaders } from './security-headers.ts';
import { authenticatePerson, hasSessionCookie } from './session.ts';

export { type HttpEvent, type HttpResult, header, MAX_BODY_BYTES, rawBody } from './event.ts';

/**
 * Where a handler's input comes from:
 * - `query`: the query string (GET);
 * - `json`: a JSON body;
 * - `form-or-query`: a form-encoded (or JSON) body merged over the query string (DELETE);
 * - `any-json`: a JSON body whatever the content type says (alarm senders: many existing shell
 *   clients post JSON with `curl -d`, which labels it form-encoded, or with no content type at all),
 *   parsed losslessly (numbers keep their digits: see shared/json.ts).
 * Numbers in the query string and form bodies are coerced (API guide §1.4); JSON keeps its types.
 */
export type InputSource = 'none' | 'query' | 'json' | 'any-json' | 'form-or-query';

/**
 * How a route authenticates:
 * - `app`: application auth only; `app+task`: plus task auth on id/timestamp/sign; `none`: public;
 * - `alarm`: an alarm intake (`/alarm/report`, the monitor adapters): no application auth, the use
 *   case authenticates with the task token or the intake token (API guide §3.3, §3.4); refusals are counted
 *   in the `AlarmsRefused` metric, every answer and refusal per function version (`IntakeReports`,
 *   `IntakeRefused`);
 * - `app|person`: an interface route the console calls too: application auth exactly as `app`, or a
 *   signed-in person (the session cookie), who then is the acting user;
 * - `reader`: a route beyond the interface: an app holding the grant `read` (`operate` where the
 *   route changes something: HandlerOptions.grant; `admin` includes both), acting as the `uid` it
 *   names, or a signed-in person (the acting user whatever `uid` says);
 * - `admin`: a deployment-wide route (dead letters): an app holding the grant `admin`, or a signed-in
 *   person (the use case requires role 9);
 * - `person`: a signed-in person only (their own password, sign out).
 */
export type AuthKind = 'none' | 'app' | 'app+task' | 'alarm' | 'app|person' | 'reader' | 'admin' | 'person';

export interface HandlerOptions {
  auth: AuthKind;
  /**
   * The input field that names the acting user (`uid` of the read routes, `created_by` of the
   * workflow operations). With a session it is set to the signed-in person, whatever the request
   * says: the console never names who acts. Default `uid` for `reader` and `admin`.
   */
  actor?: 'uid' | 'created_by';
  input: InputSource;
  /** JSON Schema of the input (the task-auth parameters are checked by the factory). */
  schema?: object;
  /**
   * The grant an app needs on a `reader` route (default `read`): `operate` for the routes that change
   * something. On an `app|person` route: the grant an app needs when the deployment sets
   * STRICT_APP_GRANTS (the interface's workflow routes).
   */
  grant?: Grant;
  /** `msg` of a successful response (default `success`). */
  successMessage?: string;
  /**
   * Answer refusals (every envelope answer but 413 and 5xx) with HTTP 200, the code travelling in
   * the envelope only: the alarm SDK endpoints (API guide §2.2), whose Go and PHP clients turn any
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
  auth: AuthKind;
  actor?: 'uid' | 'created_by';
  grant?: Grant;
  input: InputSource;
  schema?: object;
  successMessage?: string;
  refusalsAsHttp200: boolean;
  rawResponse: boolean;
}

/**
 * The type of the `data` a handler answers with, carried by the handler's type only (nothing at run
 * time): `DataOf<typeof handler>`. The OpenAPI generator (scripts/openapi/responses.ts) reads it to
 * describe each route's success answer from the type the handler returns.
 */
declare const answers: unique symbol;
export interface Answers<TData> {
  readonly [answers]?: TData;
}
export type DataOf<THandler> = THandler extends Answers<infer TData> ? TData : never;

export interface RequestContext {
  requestId: string;
  app?: App;
  /** The signed-in person (session cookie), with the session's id for sign out (never logged). */
  person?: SignedInPerson;
  session?: { id: string; hash: string };
  /** Set-Cookie values of the answer (sign-in, sign out). */
  cookies: string[];
  /** The authenticated task (auth `app+task`). */
  task?: Task;
  event: HttpEvent;
}

/** The task-auth parameters (API guide §3.2), checked by the factory before the handler's schema. */
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

/** The grant an app needs for a route, if any (`reader` and `admin` routes; strict workflow routes). */
export function grantFor(kind: AuthKind, options: Pick<HandlerOptions, 'grant'>): Grant | undefined {
  if (kind === 'admin') return 'admin';
  if (kind === 'reader') return options.grant ?? 'read';
  if (kind === 'app|person' && options.grant && config().strictAppGrants) return options.grant;
  return undefined;
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
  const actor = options.actor ?? (options.auth === 'reader' || options.auth === 'admin' ? 'uid' : undefined);

  const authAndValidate: middy.MiddlewareObj<HttpEvent, HttpResult, Error, Context & { state?: State }> = {
    before: async (request) => {
      logger.addContext(request.context);
      const event = request.event;
      const ctx: RequestContext = { requestId: request.context.awsRequestId, event, cookies: [] };
      const kind = options.auth;
      // An app signs its requests; a browser with a session sends its cookie. A request carrying app
      // headers is an app's, whatever cookie came with it.
      const asPerson =
        kind === 'person' ||
        ((kind === 'app|person' || kind === 'reader' || kind === 'admin') &&
          header(event, 'x-app-id') === undefined &&
          hasSessionCookie(event));
      // A route an app may call reads sealed values (the app's token, a task's secret and tokens)
      // whoever calls it: the key, once per container. The person-only routes read none.
      if (kind !== 'none' && kind !== 'alarm' && kind !== 'person') await loadSealKey();
      if (asPerson) {
        const signedIn = await authenticatePerson(event);
        ctx.person = signedIn.person;
        ctx.session = { id: signedIn.id, hash: signedIn.hash };
      } else if (kind !== 'none' && kind !== 'alarm') {
        ctx.app = await authenticateRequestApp(event);
        const grant = grantFor(kind, options);
        if (grant) requireGrant(ctx.app, grant);
      }
      const input = readInput(event, options.input);
      if (kind === 'app+task') {
        validateTaskAuth(input);
        ctx.task = await authenticateTask(
          input as unknown as { id: number; timestamp: string; sign: string },
        );
      }
      if (ctx.person && actor) input[actor] = ctx.person.uid;
      validate?.(input);
      if (ctx.app)
        actAs(ctx.app, actor && input[actor] !== undefined ? Number(input[actor]) : undefined, event);
      if (
        ctx.app &&
        actor === 'uid' &&
        (kind === 'reader' || kind === 'admin') &&
        ctx.app.grants.includes('admin')
      ) {
        // The super administrator's powers: the named user must exist, then the request runs as the
        // operator, who sees every task (shared/domain/tasks/access.ts).
        const uid = Number(input.uid);
        if (!(await getUser(uid))) throw new NotFoundError(`user [${uid}] not found`);
        input.uid = OPERATOR;
      }
      request.context.state = { input, ctx };
    },
  };

  const handler = middy<HttpEvent, HttpResult, Error, Context & { state?: State }>()
    .use(authAndValidate)
    .use({
      after: async (request) => {
        securityHeaders(request.event, request.response);
        if (options.auth === 'alarm') countByVersion('IntakeReports');
        flushMetrics();
      },
      onError: async (request) => {
        request.response = errorResponse(request.error, request.context.awsRequestId);
        securityHeaders(request.event, request.response);
        const status = request.response.statusCode ?? 500;
        if (options.auth === 'alarm') {
          // Refused alarm reports by envelope code (the accepted ones are counted by the pipeline), and
          // per version: a version that refuses what the others accept rolls its deployment back.
          const code = (JSON.parse(String(request.response.body)) as { code: number }).code;
          count('AlarmsRefused', { code });
          countByVersion('IntakeReports');
          countByVersion('IntakeRefused');
        }
        flushMetrics();
        if (options.refusalsAsHttp200 && status < 500 && status !== 413) request.response.statusCode = 200;
      },
    })
    .handler(async (_event, context) => {
      const state = context.state as State;
      const out = await fn(state.input as TInput, state.ctx);
      const result = options.rawResponse ? (out as HttpResult) : okResponse(out, options.successMessage);
      if (state.ctx.cookies.length) {
        result.cookies = [...(result.cookies ?? []), ...state.ctx.cookies];
      }
      return result;
    });
  const spec: HandlerSpec = Object.freeze({
    auth: options.auth,
    ...(actor ? { actor } : {}),
    ...(options.grant ? { grant: options.grant } : {}),
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
  }) as typeof handler & { readonly spec: HandlerSpec } & Answers<TOutput>;
}
