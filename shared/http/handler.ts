import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { App, Grant } from '../domain/auth/apps.ts';
import type { SignedInPerson } from '../domain/auth/sessions.ts';
import type { Task } from '../domain/tasks/model.ts';
import type { Validator } from '../domain/validation.ts';
import { logger } from '../log.ts';
import { flushMetrics } from '../metrics.ts';
import { errorResponse, okResponse } from './envelope.ts';
import type { HttpEvent, HttpResult } from './event.ts';
import type { Input, InputSource } from './input.ts';
import { securityHeaders } from './security-headers.ts';

export { type HttpEvent, type HttpResult, header, MAX_BODY_BYTES, rawBody } from './event.ts';

/**
 * How a route authenticates, by the name the route table (infra/definitions.ts) and the OpenAPI
 * document give it; each is a module of shared/http/auth that the route's handler names:
 * - `none` (`anyone`, auth/public.ts): public;
 * - `app` (`appAuth`, auth/app.ts): application auth only; `app+task` (`taskAuth`, auth/task.ts): plus
 *   task auth on id/timestamp/sign;
 * - `alarm` (`alarmSender`, auth/alarm.ts): an alarm intake (`/alarm/report`, the monitor adapters): no
 *   application auth, the use case authenticates with the task token or the intake token (API guide
 *   §3.3, §3.4); refusals are counted in the `AlarmsRefused` metric;
 * - `app|person` (`appOrPerson`, auth/app-or-person.ts): an interface route the console calls too:
 *   application auth exactly as `app`, or a signed-in person (the session cookie), who then is the
 *   acting user;
 * - `reader` (`reader`, auth/reader.ts): a route beyond the interface: an app holding the grant `read`
 *   (`operate` where the route changes something; `admin` includes both), acting as the `uid` it
 *   names, or a signed-in person (the acting user whatever `uid` says);
 * - `admin` (`adminAuth`, auth/reader.ts): a deployment-wide route (dead letters): an app holding the
 *   grant `admin`, or a signed-in person (the use case requires role 9);
 * - `person` (`personAuth`, auth/person.ts): a signed-in person only (their own password, sign out).
 */
export type AuthKind = 'none' | 'app' | 'app+task' | 'alarm' | 'app|person' | 'reader' | 'admin' | 'person';

/** The input field that names the acting user (`uid` of the read routes, `created_by` of the workflow operations). */
export type Actor = 'uid' | 'created_by';

/**
 * An authentication mode: what it checks at each step of a request (every step is optional). The
 * factory runs them in this order, around the reading and the validation of the input:
 * `caller` -> the input is read -> `admit` -> the route's schema -> `act` -> the handler body.
 */
export interface Authentication {
  readonly kind: AuthKind;
  /**
   * The input field that names the acting user. With a session it is set to the signed-in person,
   * whatever the request says: the console never names who acts.
   */
  readonly actor?: Actor;
  /** The grant the route names (the OpenAPI document's `x-tocsin-grant`), if it names one. */
  readonly grant?: Grant;
  /** Before the input is read: who calls (sets `ctx.app` or `ctx.person`; 401, 403). */
  caller?(ctx: RequestContext): Promise<void>;
  /** The input read, before the route's schema checks it (the task of `app+task`, the acting person). */
  admit?(input: Record<string, unknown>, ctx: RequestContext, source: Input): Promise<void> | void;
  /** The input valid: whom an app acts as. */
  act?(input: Record<string, unknown>, ctx: RequestContext): Promise<void> | void;
  /** Any answer, before it leaves (after `refused` for a refusal). */
  answered?(): void;
  /** A refusal's answer, before it leaves. */
  refused?(response: HttpResult): void;
}

interface Answering {
  auth: Authentication;
  /** Where the input comes from (shared/http/input.ts). */
  input: Input;
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
 * What a route declares. `schema` is its input's JSON Schema (the task-auth parameters are checked by
 * `taskAuth`), `validate` the validator generated from it (`npm run gen:validators` writes it to
 * shared/generated/validators/routes/, beside the path of the handler under functions/; the handler
 * imports it). Both or neither.
 */
export type HandlerOptions = Answering &
  ({ schema?: undefined; validate?: undefined } | { schema: object; validate: Validator });

/**
 * What a handler made by `httpHandler` declares about its input, read by the OpenAPI generator
 * (scripts/gen-openapi.ts) from the handler's read-only `spec` property.
 */
export interface HandlerSpec {
  auth: AuthKind;
  actor?: Actor;
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

interface State {
  input: Record<string, unknown>;
  ctx: RequestContext;
}
/** A Lambda context, with the request's state once the `context` middleware made it. */
type RouteContext = Context & { state?: State };
type Step = MiddlewareObj<HttpEvent, HttpResult, Error, RouteContext>;

/** A middleware of one `before` step on the request's state. */
const before = (name: string, fn: (state: State) => Promise<void> | void): Step => ({
  name,
  before: (request) => fn(request.context.state as State),
});

/**
 * The answer, whatever happened: the envelope of an error (the route's `refused` hook sees it; with
 * `refusalsAsHttp200`, HTTP 200 but for 413 and 5xx), the security headers, the metrics of the
 * invocation. The outermost middleware, so it sees every error of the others.
 */
function answer(options: Answering): Step {
  return {
    name: 'answer',
    after: async (request) => {
      securityHeaders(request.event, request.response ?? undefined);
      options.auth.answered?.();
      flushMetrics();
    },
    onError: async (request) => {
      request.response = errorResponse(request.error, request.context.awsRequestId);
      securityHeaders(request.event, request.response);
      const status = request.response.statusCode ?? 500;
      options.auth.refused?.(request.response);
      options.auth.answered?.();
      flushMetrics();
      if (options.refusalsAsHttp200 && status < 500 && status !== 413) request.response.statusCode = 200;
    },
  };
}

/**
 * The one factory every HTTP endpoint is built with. It owns the middy chain, each middleware a step a
 * route opts in to: the answer (error envelope, security headers, metrics), the authentication mode the
 * route names (its `caller`, `admit` and `act` steps), the input source it names, its generated
 * validator. The handler body only calls one domain function. The returned handler carries its
 * options as `spec` (read-only; see HandlerSpec).
 */
export function httpHandler<TInput, TOutput>(
  options: HandlerOptions,
  fn: (input: TInput, ctx: RequestContext) => Promise<TOutput>,
) {
  const { auth, input, validate } = options;
  const handler = middy<HttpEvent, HttpResult, Error, RouteContext>()
    .use(answer(options))
    .use({
      name: 'context',
      before: (request) => {
        logger.addContext(request.context);
        const ctx = { requestId: request.context.awsRequestId, event: request.event, cookies: [] };
        request.context.state = { input: {}, ctx };
      },
    })
    .use(before('caller', ({ ctx }) => auth.caller?.(ctx)))
    .use(
      before('input', (state) => {
        state.input = input.read(state.ctx.event);
      }),
    )
    .use(before('admit', ({ input: read, ctx }) => auth.admit?.(read, ctx, input)))
    .use(before('validate', ({ input: read }) => validate?.(read)))
    .use(before('act', ({ input: read, ctx }) => auth.act?.(read, ctx)))
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
    auth: auth.kind,
    ...(auth.actor ? { actor: auth.actor } : {}),
    ...(auth.grant ? { grant: auth.grant } : {}),
    input: input.source,
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
