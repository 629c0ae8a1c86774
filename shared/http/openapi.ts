/**
 * The OpenAPI 3.1 document of the HTTP API, built from the route table (infra/definitions.ts) and
 * what each handler declares to its factory (`handler.spec`: auth, input source, JSON Schema), so the
 * document describes the schemas the handlers validate with and cannot drift from them
 * (scripts/gen-openapi.ts writes shared/generated/openapi.json; a unit test fails when it is stale).
 *
 * Where a handler validates in its use case rather than in the factory (the task create/update
 * bodies, the alarm report, the monitor adapters), INPUT_DOCS names the use case's own schema objects
 * (imported, never copied) or, for the adapters whose bodies are the monitors' formats, describes them.
 * Pure: no I/O; the generator reads the handler files and the sample events.
 */
import type { RouteDef } from '../../infra/definitions.ts';
import { routeName as operationId, type Sample } from '../../scripts/gen-events.ts';
export { operationId };
import { INTAKE_PARAMS } from '../domain/alarms/adapters.ts';
import { TASK_ID, TIMESTAMP } from '../domain/alarms/report.ts';
import { MAX_CTN_DEPTH, reportSchema } from '../domain/alarms/report-schemas.ts';
import { createTaskSchema, taskConfigSchema } from '../domain/tasks/schemas.ts';
import { type HandlerSpec, MAX_BODY_BYTES, TASK_AUTH_SCHEMA } from './handler.ts';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One route as the generator hands it over. */
export interface RouteDoc {
  route: Pick<RouteDef, 'method' | 'path' | 'auth' | 'handler'>;
  spec: HandlerSpec;
  /** The handler file's doc comment (the block before `export const handler`), if any. */
  comment?: string;
  /** The route's sample request (scripts/gen-events.ts). */
  sample?: Sample;
}

/**
 * How a route authenticates, for the document (`x-tocsin-auth`): the factory's kinds, with the
 * route table's `alarm` split by where the credentials travel.
 */
export type AuthDoc =
  | 'none'
  | 'app'
  | 'app+task'
  | 'alarm-body'
  | 'intake-query'
  | 'app|person'
  | 'reader'
  | 'admin'
  | 'person';

export function authOf(doc: Pick<RouteDoc, 'route' | 'spec'>): AuthDoc {
  const { route, spec } = doc;
  if (route.auth === 'alarm') return spec.input === 'none' ? 'intake-query' : 'alarm-body';
  if (route.auth === 'local') return 'none';
  return route.auth;
}

// ---- JSON Schema 2020-12 (the dialect of OpenAPI 3.1's Schema Object)

/** The keywords of JSON Schema 2020-12 and OpenAPI 3.1's own Schema Object fields. */
const KEYWORDS_2020 = new Set([
  '$schema',
  '$id',
  '$anchor',
  '$dynamicAnchor',
  '$vocabulary',
  '$comment',
  '$defs',
  'prefixItems',
  'items',
  'contains',
  'additionalProperties',
  'properties',
  'patternProperties',
  'dependentSchemas',
  'propertyNames',
  'if',
  'then',
  'else',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'unevaluatedItems',
  'unevaluatedProperties',
  'type',
  'const',
  'enum',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  'format',
  'contentEncoding',
  'contentMediaType',
  'contentSchema',
  'title',
  'description',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'examples',
  'example',
  'discriminator',
  'xml',
  'externalDocs',
]);
const SCHEMA_VALUED = new Set([
  'items',
  'contains',
  'additionalProperties',
  'propertyNames',
  'if',
  'then',
  'else',
  'not',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
]);
const SCHEMA_LISTS = new Set(['prefixItems', 'allOf', 'anyOf', 'oneOf']);
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs']);

/**
 * A handler's schema (written for ajv, draft-07 style) as a JSON Schema 2020-12 Schema Object: the
 * draft-07 keywords 2020-12 renamed are translated (`definitions`, `dependencies`, tuple `items`,
 * `additionalItems`, boolean `exclusiveMinimum`/`exclusiveMaximum`); extensions (`x-message`) stay;
 * any other keyword, and any `$ref` (it would resolve against the document, not the schema), is an
 * error naming where it is. The input is never modified.
 */
export function toSchema2020(schema: unknown, where = '#'): unknown {
  if (typeof schema === 'boolean') return schema;
  if (!isObject(schema)) throw new Error(`${where}: a schema must be an object or a boolean`);
  const out: Json = {};
  const sub = (v: unknown, key: string) => toSchema2020(v, `${where}/${key}`);
  for (const [k, v] of Object.entries(schema)) {
    if (k.startsWith('x-')) out[k] = v;
    else if (k === '$ref' || k === '$dynamicRef' || k === '$recursiveRef') {
      throw new Error(`${where}: ${k} is not supported in a handler schema (inline the schema)`);
    } else if (k === 'definitions') out.$defs = mapValues(v, (s, n) => sub(s, `${k}/${n}`));
    else if (k === 'dependencies' && isObject(v)) {
      for (const [name, dep] of Object.entries(v)) {
        const target = Array.isArray(dep) ? 'dependentRequired' : 'dependentSchemas';
        out[target] = {
          ...((out[target] as Json) ?? {}),
          [name]: Array.isArray(dep) ? dep : sub(dep, `${k}/${name}`),
        };
      }
    } else if (k === 'items' && Array.isArray(v)) {
      out.prefixItems = v.map((s, i) => sub(s, `items/${i}`));
      if (schema.additionalItems !== undefined) out.items = sub(schema.additionalItems, 'additionalItems');
    } else if (k === 'additionalItems') {
      if (!Array.isArray(schema.items)) throw new Error(`${where}: additionalItems without tuple items`);
    } else if ((k === 'exclusiveMinimum' || k === 'exclusiveMaximum') && typeof v === 'boolean') {
      const bound = k === 'exclusiveMinimum' ? 'minimum' : 'maximum';
      if (v) out[k] = schema[bound];
    } else if (!KEYWORDS_2020.has(k)) {
      throw new Error(`${where}: ${k} is not a JSON Schema 2020-12 keyword (OpenAPI 3.1)`);
    } else if (SCHEMA_VALUED.has(k)) out[k] = sub(v, k);
    else if (SCHEMA_LISTS.has(k)) out[k] = (v as unknown[]).map((s, i) => sub(s, `${k}/${i}`));
    else if (SCHEMA_MAPS.has(k)) out[k] = mapValues(v, (s, n) => sub(s, `${k}/${n}`));
    else out[k] = structuredClone(v);
  }
  // A draft-04 boolean exclusive bound: its number moved to the exclusive keyword.
  for (const [k, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (schema[k] === true) delete out[bound];
  }
  return out;
}

function mapValues(v: unknown, f: (value: unknown, name: string) => unknown): Json {
  if (!isObject(v)) throw new Error('expected an object of schemas');
  return Object.fromEntries(Object.entries(v).map(([n, s]) => [n, f(s, n)]));
}

/** `a` and `b` as one object schema: properties and required lists joined (b's property wins). */
function mergeObjects(a: Json, b: Json): Json {
  const required = [...new Set([...((a.required as string[]) ?? []), ...((b.required as string[]) ?? [])])];
  return {
    ...a,
    ...b,
    type: 'object',
    properties: { ...((a.properties as Json) ?? {}), ...((b.properties as Json) ?? {}) },
    ...(required.length ? { required } : {}),
  };
}

// ---- What the handlers that validate in their use case take

/** Alarm authentication (API guide §3.3) in a JSON body; taskid and timestamp may be numeric strings. */
const ALARM_AUTH_SCHEMA = {
  type: 'object',
  required: ['taskid', 'timestamp', 'sign'],
  properties: {
    taskid: {
      description: 'The task id (a number or a numeric string).',
      anyOf: [
        { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
        { type: 'string', pattern: TASK_ID.source },
      ],
    },
    timestamp: {
      description: 'Unix seconds (a number or a numeric string); at most the alarm skew from now.',
      anyOf: [
        { type: 'integer', minimum: 0, maximum: 999_999_999_999 },
        { type: 'string', pattern: TIMESTAMP.source },
      ],
    },
    sign: {
      type: 'string',
      minLength: 1,
      maxLength: 128,
      description:
        'md5(taskid + "&" + timestamp + token) or hmac_sha256(token, taskid + "&" + timestamp), lower-case hex, with the task token.',
    },
  },
};

const CTN_SCHEMA = {
  type: 'object',
  minProperties: 1,
  description: `The alarm content: a non-empty JSON object, nested at most ${MAX_CTN_DEPTH} levels.`,
};

const ALERT_SCHEMA = {
  type: 'object',
  required: ['labels'],
  properties: {
    status: { enum: ['firing', 'resolved'], description: 'A resolved alert is a recovery.' },
    labels: {
      type: 'object',
      description: 'Its `severity` (else `level`, `priority`) label sets the alarm level.',
    },
    annotations: { type: 'object' },
    startsAt: { type: 'string', description: 'With the fingerprint, makes a re-sent alert the same alarm.' },
    endsAt: { type: 'string' },
    generatorURL: { type: 'string' },
    fingerprint: { type: 'string' },
  },
};

const FORM_FIELDS = { type: 'object', additionalProperties: { type: 'string' } };

/** Documentation of a route's input beyond (or instead of) its factory schema, by handler file. */
export interface InputDoc {
  /** The body / query schema the use case validates with (the factory has none). */
  schema?: object;
  /** Properties the use case reads beyond the factory's schema (merged into it). */
  also?: object;
  /** Request bodies by media type (monitor adapters: the monitor's own format). */
  contents?: Record<string, object>;
  /** A free-form query (`GET /alarm/falcon`: the parameters are the alarm content). */
  freeQuery?: string;
  /** Whether a body must be sent. */
  bodyRequired?: boolean;
  /** The refusals this route can answer (default: derived from its auth and input). */
  refusals?: RefusalName[];
}

/** What an alarm intake refuses (API guide §7.1: 4000, 401, 4001/4002, 4010). */
const INTAKE_REFUSALS: RefusalName[] = [
  'InvalidAlarm',
  'Unauthorized',
  'TaskNotAccepting',
  'PayloadTooLarge',
  'TooManyRequests',
  'InternalError',
];

export const INPUT_DOCS: Record<string, InputDoc> = {
  'functions/http/auth/sign-in.ts': {
    refusals: [
      'BadRequest',
      'Unauthorized',
      'Forbidden',
      'PayloadTooLarge',
      'ValidationFailed',
      'SignInLocked',
      'InternalError',
    ],
  },
  'functions/http/auth/change-password.ts': {
    refusals: [
      'BadRequest',
      'Unauthorized',
      'Forbidden',
      'Conflict',
      'PayloadTooLarge',
      'ValidationFailed',
      'SignInLocked',
      'InternalError',
    ],
  },
  'functions/http/auth/get-session.ts': { refusals: ['Unauthorized', 'InternalError'] },
  'functions/http/auth/oidc-start.ts': { refusals: ['NotFound', 'InternalError'] },
  'functions/http/auth/oidc-callback.ts': { refusals: ['NotFound', 'ValidationFailed', 'InternalError'] },
  'functions/http/alarmtask/store-task.ts': { schema: createTaskSchema },
  'functions/http/alarmtask/update-task.ts': { schema: taskConfigSchema },
  // The named paths are copied from the body into the task, then the whole is checked.
  'functions/http/alarmtask/update-task-fields.ts': { also: { properties: taskConfigSchema.properties } },
  'functions/alarm/report-alarm.ts': {
    schema: mergeObjects(
      mergeObjects(ALARM_AUTH_SCHEMA, { required: ['ctn'], properties: { ctn: CTN_SCHEMA } }),
      reportSchema,
    ),
    refusals: INTAKE_REFUSALS,
  },
  'functions/alarm/test-alarm.ts': {
    schema: ALARM_AUTH_SCHEMA,
    refusals: ['BadRequest', 'Unauthorized', 'PayloadTooLarge', 'InternalError'],
  },
  'functions/alarm/intake-alertmanager.ts': {
    contents: {
      'application/json': {
        type: 'object',
        required: ['alerts'],
        properties: {
          version: { const: '4' },
          status: { enum: ['firing', 'resolved'] },
          alerts: { type: 'array', items: ALERT_SCHEMA },
        },
      },
    },
    bodyRequired: true,
    refusals: INTAKE_REFUSALS,
  },
  'functions/alarm/intake-grafana.ts': {
    contents: {
      'application/json': {
        anyOf: [
          {
            type: 'object',
            required: ['alerts'],
            description: 'Grafana alerting',
            properties: { alerts: { type: 'array', items: ALERT_SCHEMA } },
          },
          {
            type: 'object',
            required: ['msgtype'],
            description: "Grafana's legacy DingDing notifier: `msgtype` and the object it names",
            properties: { msgtype: { type: 'string', minLength: 1 } },
          },
        ],
      },
    },
    bodyRequired: true,
    refusals: INTAKE_REFUSALS,
  },
  'functions/alarm/intake-jsonbody.ts': {
    contents: { 'application/json': { ...CTN_SCHEMA, description: 'The whole body is the alarm content.' } },
    bodyRequired: true,
    refusals: INTAKE_REFUSALS,
  },
  'functions/alarm/intake-rawbody.ts': {
    freeQuery: 'Without a body (GET): the alarm content.',
    contents: {
      'text/plain': { type: 'string', minLength: 1, description: 'Any text; the alarm content is `{body}`.' },
    },
    bodyRequired: true,
    refusals: INTAKE_REFUSALS,
  },
  'functions/alarm/intake-falcon.ts': {
    freeQuery: 'The alarm content (Open-Falcon callback parameters, e.g. endpoint, metric, status).',
    contents: { 'application/x-www-form-urlencoded': FORM_FIELDS },
    refusals: INTAKE_REFUSALS,
  },
  'functions/alarm/intake-aliyun.ts': {
    contents: {
      'application/x-www-form-urlencoded': {
        ...FORM_FIELDS,
        description: "CloudMonitor's alarm callback fields (alertName, expression, dimensions, ...).",
      },
    },
    bodyRequired: true,
    refusals: INTAKE_REFUSALS,
  },
  'functions/alarm/heartbeat.ts': { refusals: ['Unauthorized', 'Conflict', 'InternalError'] },
};

// ---- Errors (API guide §2)

/** A refusal answer of the API: its HTTP status, the envelope codes it carries, an example `msg`. */
interface Refusal {
  status: number;
  description: string;
  codes: number[];
  example: string;
}

/** The refusals, by the name of their response component. */
export const REFUSALS = {
  BadRequest: {
    status: 400,
    description: 'Malformed request: body not valid JSON, wrong content type.',
    codes: [400],
    example: 'request body is not valid JSON',
  },
  InvalidAlarm: {
    status: 400,
    description: 'Malformed request (400) or invalid alarm (4000).',
    codes: [400, 4000],
    example: 'ctn must be a JSON object',
  },
  Unauthorized: {
    status: 401,
    description: 'Application, task or alarm authentication failed.',
    codes: [401],
    example: 'signature invalid',
  },
  Forbidden: {
    status: 403,
    description:
      'The acting user may not act on that task, the app lacks the grant the route needs, or a request with the session cookie came from another origin or without its CSRF token.',
    codes: [403],
    example: 'user [7] has no permission on task [12]',
  },
  NotFound: {
    status: 404,
    description: 'Unknown department, user, task, workflow, alarm group or route.',
    codes: [404],
    example: 'task [12] not found',
  },
  Conflict: {
    status: 409,
    description: 'The request conflicts with the current state.',
    codes: [409],
    example: 'task [12] is already stopped',
  },
  TaskNotAccepting: {
    status: 409,
    description: 'The task is stopped (4001) or paused (4002).',
    codes: [4001, 4002],
    example: 'task was stopped',
  },
  PayloadTooLarge: {
    status: 413,
    description: `Body larger than ${MAX_BODY_BYTES / 1024} KiB.`,
    codes: [413],
    example: 'request body too large',
  },
  ValidationFailed: {
    status: 422,
    description:
      'Validation failed: `msg` is the first problem, `data.errors` lists all as `{field, message}`.',
    codes: [422],
    example: 'name must be at most 100 characters',
  },
  TooManyRequests: {
    status: 429,
    description: "The task's alarm rate limit was reached (4010), with a `Retry-After` header.",
    codes: [4010],
    example: 'task [12] reached its rate limit of 200 alarms per second',
  },
  SignInLocked: {
    status: 429,
    description:
      'Too many failed sign-ins for the account or from the address: refused, the right password too, until `Retry-After` seconds have passed.',
    codes: [429],
    example: 'too many failed sign-ins for this account: try again in 15 minutes',
  },
  InternalError: {
    status: 500,
    description: 'Unexpected failure (never a stack trace or a secret).',
    codes: [500],
    example: 'internal error',
  },
} satisfies Record<string, Refusal>;

export type RefusalName = keyof typeof REFUSALS;

/** The codes API guide §2.1 lists, for the error table of the description and the reference page. */
export const ERROR_CODES: { code: number; status: number; when: string }[] = [
  { code: 0, status: 200, when: 'success' },
  { code: 400, status: 400, when: 'malformed request: body is not valid JSON, wrong content type' },
  { code: 401, status: 401, when: 'application, task or alarm authentication failed' },
  { code: 403, status: 403, when: 'the acting user may not act on that task' },
  { code: 404, status: 404, when: 'unknown department, user, task, workflow, alarm group, route' },
  { code: 409, status: 409, when: 'the request conflicts with the current state' },
  { code: 413, status: 413, when: 'body too large' },
  { code: 422, status: 422, when: 'validation failed (`data.errors` lists every field)' },
  {
    code: 429,
    status: 429,
    when: 'too many failed sign-ins (the account or the address is locked for a while)',
  },
  { code: 4000, status: 400, when: 'invalid alarm report' },
  { code: 4001, status: 409, when: 'alarm reported to a stopped task' },
  { code: 4002, status: 409, when: 'alarm reported to a paused task' },
  { code: 4010, status: 429, when: "the task's alarm rate limit was reached" },
  { code: 500, status: 500, when: 'unexpected failure' },
];

const hasBody = (input: HandlerSpec['input']) =>
  input === 'json' || input === 'any-json' || input === 'form-or-query';

/** The refusals a route can answer, from its auth and input (or its InputDoc), by status. */
export function refusalsOf(doc: RouteDoc): RefusalName[] {
  const given = INPUT_DOCS[doc.route.handler]?.refusals;
  if (given) return given;
  const auth = authOf(doc);
  const { input } = doc.spec;
  const out = new Set<RefusalName>(['InternalError']);
  if (hasBody(input)) {
    out.add('BadRequest');
    out.add('PayloadTooLarge');
  }
  if (auth !== 'none') out.add('Unauthorized');
  // A grant an app lacks, a session's request from elsewhere or without its CSRF token.
  if (auth === 'app|person' || auth === 'reader' || auth === 'admin' || auth === 'person')
    out.add('Forbidden');
  const actsOnData = auth === 'app' || auth === 'app|person' || auth === 'reader' || auth === 'admin';
  if ((actsOnData && input !== 'none') || auth === 'app+task') {
    for (const r of ['Forbidden', 'NotFound', 'ValidationFailed'] as const) out.add(r);
    if (doc.route.method !== 'GET') out.add('Conflict');
  } else if (input !== 'none' && (doc.spec.schema || INPUT_DOCS[doc.route.handler]?.schema)) {
    out.add('ValidationFailed');
  }
  return [...out].sort((a, b) => REFUSALS[a].status - REFUSALS[b].status);
}

// ---- The document

const ENVELOPE = {
  type: 'object',
  required: ['code', 'msg', 'data'],
  properties: {
    code: { type: 'integer', description: '0 on success, else the error code (API guide §2.1).' },
    msg: {
      type: 'string',
      description: '`success`, or a lower-case English message naming the field or id.',
    },
    data: { type: 'object', description: 'The answer; `{}` when there is nothing to return.' },
  },
};

const SECURITY_SCHEMES = {
  AppId: { type: 'apiKey', in: 'header', name: 'X-App-Id', description: 'The application id (integer).' },
  AppTimestamp: {
    type: 'apiKey',
    in: 'header',
    name: 'X-App-Timestamp',
    description: 'Unix seconds; at most the allowed skew (default 300 s) from now.',
  },
  AppSign: {
    type: 'apiKey',
    in: 'header',
    name: 'X-App-Sign',
    description:
      'hmac_sha256(key = app token, message = appid + "&" + timestamp), or the legacy md5(appid + "&" + timestamp + token); lower-case hex.',
  },
  Session: {
    type: 'apiKey',
    in: 'cookie',
    name: 'tocsin_session',
    description:
      'A signed-in person (POST /auth/signin, or single sign-on): the HttpOnly session cookie. The person is the acting user; `uid` / `created_by` in the request are ignored.',
  },
  CsrfToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-CSRF-Token',
    description:
      "With the session cookie, every request that changes something carries the session's CSRF token (GET /auth/session) and an `Origin` of this service.",
  },
  IntakeTaskId: { type: 'apiKey', in: 'query', name: 'taskid', description: 'The task id.' },
  IntakeToken: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'The intake token (PUT /alarmtask/intake).',
  },
  IntakeBearer: { type: 'http', scheme: 'bearer', description: 'The intake token as a bearer token.' },
  IntakeTimestamp: {
    type: 'apiKey',
    in: 'query',
    name: 'timestamp',
    description: 'The fixed signature: its timestamp (no skew check; only when the task turned it on).',
  },
  IntakeSign: {
    type: 'apiKey',
    in: 'query',
    name: 'sign',
    description: 'The fixed signature, signed as /alarm/report with the task token.',
  },
};

const APP_SECURITY = { AppId: [], AppTimestamp: [], AppSign: [] };

const SECURITY: Record<AuthDoc, Json[] | undefined> = {
  none: [],
  app: [APP_SECURITY],
  'app+task': [APP_SECURITY],
  'app|person': [APP_SECURITY, { Session: [] }],
  reader: [APP_SECURITY, { Session: [] }],
  admin: [APP_SECURITY, { Session: [] }],
  person: [{ Session: [] }],
  // The credentials are body fields (taskid, timestamp, sign): no security scheme describes them.
  'alarm-body': [],
  'intake-query': [
    { IntakeTaskId: [], IntakeBearer: [] },
    { IntakeTaskId: [], IntakeToken: [] },
    { IntakeTaskId: [], IntakeTimestamp: [], IntakeSign: [] },
  ],
};

export const AUTH_TEXT: Record<AuthDoc, string> = {
  none: 'None.',
  app: 'Application authentication: headers X-App-Id, X-App-Timestamp, X-App-Sign (API guide §3.1).',
  'app+task':
    'Application authentication (headers) and task authentication: `id`, `timestamp`, `sign` = hmac_sha256(task secret, id + "&" + timestamp) or the legacy md5(id + "&" + timestamp + secret), in the query (GET), the JSON body (PUT) or a form body or the query (DELETE) (API guide §3.2).',
  'alarm-body':
    'Alarm authentication: `taskid`, `timestamp`, `sign` in the JSON body, signed with the task token (API guide §3.3).',
  'intake-query':
    '`taskid` in the query and the intake token (`Authorization: Bearer <token>` or `token` in the query), or the fixed signature (`timestamp` and `sign` in the query) when the task turned it on.',
  'app|person':
    'Application authentication (headers), or a signed-in person (the session cookie), who is then the acting user (`created_by`).',
  reader:
    "A signed-in person (the session cookie), the acting user whatever `uid` says; or application authentication by an app holding the grant `read` (or `admin`), acting as the `uid` it names (403 naming the grant otherwise). With `admin` the app has the super administrator's powers.",
  admin:
    'A signed-in person with role 9 (the session cookie); or application authentication by an app holding the grant `admin` (403 naming the grant otherwise).',
  person:
    "A signed-in person: the session cookie, and on a change the session's CSRF token (`X-CSRF-Token`) and this service's `Origin`.",
};

/** Tag (by the path's first segment) and its description; unknown segments are their own tag. */
const TAGS: Record<string, { name: string; description: string }> = {
  health: { name: 'Service', description: 'Liveness.' },
  department: {
    name: 'Directory',
    description: 'Departments and users (loaded by `npm run admin -- import`).',
  },
  user: { name: 'Directory', description: 'Departments and users (loaded by `npm run admin -- import`).' },
  alarmtask: { name: 'Alarm tasks', description: 'Create, configure and run alarm tasks (API guide §5).' },
  alarm: { name: 'Alarm ingestion', description: 'Reporting alarms with the alarm SDKs (API guide §7).' },
  workflow: { name: 'Workflows', description: 'The workflows alarms open (API guide §10).' },
  auth: {
    name: 'Sign-in',
    description:
      'People sign in to the console: account and password, or single sign-on through OpenID Connect (docs/sign-in.md).',
  },
  'openapi.json': { name: 'Docs', description: 'This document and its reference page.' },
  docs: { name: 'Docs', description: 'This document and its reference page.' },
};
const INTAKE_TAG = {
  name: 'Monitor adapters',
  description:
    'Alerts from Alertmanager, Grafana, Open-Falcon, CloudMonitor and any JSON or text sender; heartbeats.',
};

export function tagOf(doc: Pick<RouteDoc, 'route' | 'spec'>): { name: string; description?: string } {
  if (authOf(doc) === 'intake-query') return INTAKE_TAG;
  const segment = doc.route.path.split('/')[1] ?? '';
  return TAGS[segment] ?? { name: segment.charAt(0).toUpperCase() + segment.slice(1) };
}

/**
 * Summaries of the routes whose doc comment starts with something else than one; the others take the
 * first sentence of their comment.
 */
const SUMMARIES: Record<string, string> = {
  'GET /health': 'Liveness and version',
  'GET /department/simple': 'List departments',
  'GET /department/show': 'Show a department',
  'GET /user/profile': "A user's profile and task permissions",
  'PUT /user/updatephone': "Update a user's phone",
  'POST /alarmtask/store': 'Create an alarm task',
  'GET /alarmtask/show': 'Show an alarm task',
  'PUT /alarmtask/update': 'Replace an alarm task',
  'PUT /alarmtask/updatefields': 'Update fields of an alarm task',
  'DELETE /alarmtask': 'Delete an alarm task',
  'POST /alarm/report': 'Report an alarm',
  'POST /alarm/test': "Check the alarm SDK's authentication",
  'GET /workflow/show': 'Show a workflow',
  'PUT /workflow/claim': 'Claim workflows',
  'PUT /workflow/assign': 'Assign workflows',
  'PUT /workflow/processed': 'Mark workflows processed',
  'PUT /workflow/reactive': 'Reactivate workflows',
  'PUT /workflow/close': 'Close workflows',
  'PUT /alarmtask/stop': 'Stop an alarm task',
  'PUT /alarmtask/start': 'Start an alarm task',
  'PUT /alarmtask/pause': 'Pause an alarm task',
  'PUT /alarmtask/intake': 'Issue or revoke the intake token, or turn the fixed signature on or off',
  'PUT /alarmtask/ratelimit': "Set the task's alarm rate limit",
  'PUT /alarmtask/heartbeat': "Set the task's heartbeat",
  'GET /alarm/rawbody': 'The query parameters as an alarm',
  'POST /alarm/rawbody': 'Any text body as an alarm',
  'POST /alarm/arms': 'Any text body as an alarm (ARMS)',
  'GET /alarm/falcon': 'Open-Falcon callback',
  'POST /alarm/falcon': 'Open-Falcon callback (form body)',
  'GET /alarm/heartbeat': "A task's heartbeat ping",
  'POST /alarm/heartbeat': "A task's heartbeat ping",
  'POST /auth/signin': 'Sign in with an account and a password',
  'GET /auth/session': 'The signed-in person and the CSRF token',
  'POST /auth/signout': 'Sign out (here or everywhere)',
  'PUT /auth/password': 'Change your own password',
  'GET /auth/oidc/start': 'Single sign-on: go to the OpenID Connect provider',
  'GET /auth/oidc/callback': 'Single sign-on: back from the provider',
  'GET /openapi.json': 'This OpenAPI document',
  'GET /docs': 'The API reference page',
};

const ROUTE_PREFIX = /^(?:(?:GET|POST|PUT|DELETE)\|?)+\s+\/\S*/;

/** The doc comment without the route it starts with. */
export function descriptionOf(comment: string | undefined): string {
  return (comment ?? '')
    .trim()
    .replace(ROUTE_PREFIX, '')
    .replace(/^\s*[:;,.-]\s*/, '')
    .trim();
}

/** An explicit summary, else the description's first sentence, else the route. */
export function summaryOf(doc: RouteDoc): string {
  const key = `${doc.route.method} ${doc.route.path}`;
  if (SUMMARIES[key]) return SUMMARIES[key];
  const first = descriptionOf(doc.comment)
    .replace(/^\([^)]*\)\s*[:;,.-]?\s*/, '')
    .split(/(?<=[a-z0-9)`'"])[.;:](?:\s|$)|\s\(/)[0]
    .trim();
  if (!first) return key;
  const text = first.charAt(0).toUpperCase() + first.slice(1);
  return text.length > 90 ? `${text.slice(0, 87)}...` : text;
}

/** The schema a route's input is checked against: the factory's (plus task auth) or the use case's. */
export function inputSchema(doc: RouteDoc): Json | undefined {
  const docs = INPUT_DOCS[doc.route.handler];
  if (docs?.schema && doc.spec.schema)
    throw new Error(`${doc.route.handler}: INPUT_DOCS gives a schema the factory has`);
  const factory = doc.spec.schema as Json | undefined;
  const own = docs?.also
    ? mergeObjects(docs.also as Json, factory ?? {})
    : ((factory ?? docs?.schema) as Json | undefined);
  const withAuth = doc.spec.auth === 'app+task' ? mergeObjects(TASK_AUTH_SCHEMA, own ?? {}) : own;
  return withAuth && (toSchema2020(withAuth, `${doc.route.method} ${doc.route.path}`) as Json);
}

/** Top-level keywords a parameter list can express (the rest of a query schema is kept aside). */
const PARAMETER_KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties', 'description']);

/** A query or form value of a sample as the schema types it (`"1"` for an integer is 1). */
function typed(value: string, schema: Json | undefined): unknown {
  const types = [schema?.type].flat();
  if (types.includes('string') || !/^-?[0-9]+(\.[0-9]+)?$/.test(value)) return value;
  return types.includes('integer') || types.includes('number') ? Number(value) : value;
}

/** The sample's fields typed by the schema's properties (the examples of query and form inputs). */
function typedFields(fields: Record<string, string> | undefined, schema: Json): Json | undefined {
  if (!fields) return undefined;
  const props = (schema.properties as Record<string, Json>) ?? {};
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typed(v, props[k])]));
}

function queryParameters(
  schema: Json,
  required: boolean,
  sample: Record<string, string> | undefined,
): Json[] {
  const props = (schema.properties as Record<string, Json>) ?? {};
  const req = new Set((schema.required as string[]) ?? []);
  const examples = typedFields(sample, schema);
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    return {
      name,
      in: 'query',
      required: required && req.has(name),
      ...(description ? { description } : {}),
      schema: rest,
      ...(examples?.[name] !== undefined ? { example: examples[name] } : {}),
    };
  });
}

function bodyExample(sample: RouteDoc['sample'], mediaType: string, schema: Json): unknown {
  if (!sample) return undefined;
  if (mediaType === 'application/json') return sample.json;
  if (mediaType === 'application/x-www-form-urlencoded') return typedFields(sample.form, schema);
  if (mediaType === 'text/plain') return sample.text;
  return undefined;
}

function content(schemas: Record<string, unknown>, sample: RouteDoc['sample']): Json {
  return Object.fromEntries(
    Object.entries(schemas).map(([mt, schema]) => {
      const example = bodyExample(sample, mt, schema as Json);
      return [mt, { schema, ...(example !== undefined ? { example } : {}) }];
    }),
  );
}

/** Parameters and request body of an operation. */
function inputOf(doc: RouteDoc): { parameters?: Json[]; requestBody?: Json; extra?: Json } {
  const { input } = doc.spec;
  const docs = INPUT_DOCS[doc.route.handler];
  const schema = inputSchema(doc);
  const sample = doc.sample;
  const parameters: Json[] = [];
  if (authOf(doc) === 'intake-query') {
    parameters.push({
      name: 'level',
      in: 'query',
      required: false,
      description: 'The alarm level when the alert carries none (0 notice, 1 warning, 2 error, 3 urgent).',
      schema: { type: 'integer', enum: [0, 1, 2, 3], default: 0 },
    });
    if (docs?.freeQuery) {
      parameters.push({
        name: 'content',
        in: 'query',
        required: false,
        description: `${docs.freeQuery} Every parameter but ${INTAKE_PARAMS.join(', ')}.`,
        style: 'form',
        explode: true,
        schema: { type: 'object', additionalProperties: { type: 'string' } },
      });
    }
  }
  const aside =
    schema && Object.keys(schema).filter((k) => !PARAMETER_KEYWORDS.has(k) && !k.startsWith('x-'));
  const extra = aside?.length
    ? { 'x-input-constraints': Object.fromEntries(aside.map((k) => [k, schema![k]])) }
    : {};
  if (input === 'query' && schema) return { parameters: queryParameters(schema, true, sample?.query), extra };
  if (input === 'form-or-query' && schema) {
    return {
      parameters: queryParameters(schema, false, sample?.form),
      requestBody: {
        description: 'The parameters in a form (or JSON) body, or in the query string; the body wins.',
        required: false,
        content: content({ 'application/x-www-form-urlencoded': schema, 'application/json': schema }, sample),
      },
      extra,
    };
  }
  if ((input === 'json' || input === 'any-json') && (schema || input === 'json')) {
    const body = schema ?? { type: 'object' };
    return {
      requestBody: {
        ...(input === 'any-json'
          ? { description: 'Read as JSON whatever the content type says (existing clients send `curl -d`).' }
          : {}),
        required: ((body.required as string[]) ?? []).length > 0,
        content: content({ 'application/json': body }, sample),
      },
      extra,
    };
  }
  if (docs?.contents) {
    const contents = Object.fromEntries(
      Object.entries(docs.contents).map(([mt, s]) => [mt, toSchema2020(s, `${doc.route.handler} ${mt}`)]),
    );
    return {
      ...(parameters.length ? { parameters } : {}),
      ...(doc.route.method === 'GET'
        ? {}
        : { requestBody: { required: docs.bodyRequired === true, content: content(contents, sample) } }),
    };
  }
  return parameters.length ? { parameters } : {};
}

const envelopeWith = (code: unknown, msg?: unknown): Json => ({
  allOf: [{ $ref: '#/components/schemas/Envelope' }, { properties: { code, ...(msg ? { msg } : {}) } }],
});

function responsesOf(doc: RouteDoc): Json {
  const refusals = refusalsOf(doc);
  const ok = doc.spec.successMessage ?? 'success';
  const responses: Json = {};
  if (doc.spec.rawResponse && doc.route.path.startsWith('/auth/oidc/')) {
    responses['303'] = {
      description:
        'A browser redirect: to the OpenID Connect provider (start), to the console signed in, or to its sign-in page with the reason of a refusal (`#signin-error=...`).',
      headers: { Location: { schema: { type: 'string' } } },
    };
  } else if (doc.spec.rawResponse) {
    const type = doc.route.path.endsWith('.json') ? 'application/json' : 'text/html';
    responses['200'] = {
      description: type === 'text/html' ? 'The reference page.' : 'The OpenAPI document.',
      content: { [type]: { schema: type === 'text/html' ? { type: 'string' } : { type: 'object' } } },
    };
  } else if (doc.spec.refusalsAsHttp200) {
    // API guide §2.2: the SDK endpoints answer every refusal but 413 and 5xx with HTTP 200.
    const folded = refusals.filter((r) => REFUSALS[r].status !== 413 && REFUSALS[r].status < 500);
    const codes = [0, ...folded.flatMap((r) => REFUSALS[r].codes)];
    responses['200'] = {
      description: `Success (code 0) or a refusal, whose code travels in the envelope only: ${codes.slice(1).join(', ')} (API guide §2.2).`,
      ...(folded.includes('TooManyRequests')
        ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }
        : {}),
      content: { 'application/json': { schema: envelopeWith({ enum: codes }) } },
    };
  } else if (ok === 'success') {
    responses['200'] = { $ref: '#/components/responses/Success' };
  } else {
    responses['200'] = {
      description: `Success: code 0, msg \`${ok}\`.`,
      content: { 'application/json': { schema: envelopeWith({ const: 0 }, { const: ok }) } },
    };
  }
  for (const r of refusals) {
    const { status } = REFUSALS[r];
    if (doc.spec.refusalsAsHttp200 && status !== 413 && status < 500) continue;
    if (responses[String(status)]) throw new Error(`${doc.route.handler}: two refusals with HTTP ${status}`);
    responses[String(status)] = { $ref: `#/components/responses/${r}` };
  }
  return responses;
}

function operationOf(doc: RouteDoc): Json {
  const auth = authOf(doc);
  // The comment whole, unless it only names the route.
  const description = descriptionOf(doc.comment) ? (doc.comment ?? '').trim() : '';
  const { parameters, requestBody, extra } = inputOf(doc);
  // A change made with the session cookie also carries the session's CSRF token.
  const security = SECURITY[auth]?.map((req) =>
    'Session' in req && doc.route.method !== 'GET' ? { ...req, CsrfToken: [] } : req,
  );
  return {
    operationId: operationId(doc.route),
    summary: summaryOf(doc),
    ...(description ? { description } : {}),
    tags: [tagOf(doc).name],
    ...(security ? { security } : {}),
    'x-tocsin-auth': auth,
    ...(parameters?.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: responsesOf(doc),
    ...extra,
  };
}

const ERROR_TABLE = [
  '| code | HTTP | when |',
  '|---|---|---|',
  ...ERROR_CODES.map((e) => `| ${e.code} | ${e.status} | ${e.when} |`),
].join('\n');

export const INFO_DESCRIPTION = [
  'tocsin: alarm tasks, alarm ingestion, notifications and workflows.',
  'Every response, success or failure, is the envelope `{code, msg, data}`; `data` is `{}` when there is nothing to return. Times are Unix seconds; ids positive integers.',
  'Numbers in the query string and form bodies may be numeric strings; JSON bodies keep their types. Unknown fields are ignored. Bodies over 256 KiB are refused (413).',
  '`POST /alarm/report` and `POST /alarm/test` answer HTTP 200 for every refusal but 413 and 5xx: the code travels in the envelope only. Every other route answers with the HTTP status of its code.',
  ERROR_TABLE,
].join('\n\n');

export interface BuildOptions {
  version: string;
}

/** The OpenAPI 3.1 document of `docs` (in their order; one path item per path). */
export function buildOpenApi(docs: RouteDoc[], opts: BuildOptions): Json {
  const paths: Record<string, Json> = {};
  const tags = new Map<string, string | undefined>();
  for (const doc of docs) {
    paths[doc.route.path] ??= {};
    const item = paths[doc.route.path];
    const method = doc.route.method.toLowerCase();
    if (item[method]) throw new Error(`${doc.route.method} ${doc.route.path} is in the route table twice`);
    item[method] = operationOf(doc);
    const tag = tagOf(doc);
    if (!tags.has(tag.name)) tags.set(tag.name, tag.description);
  }
  const responses: Json = Object.fromEntries(
    Object.entries(REFUSALS).map(([name, e]) => [
      name,
      {
        description: `${e.description} Codes: ${e.codes.join(', ')}.`,
        ...(e.status === 429
          ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }
          : {}),
        content: {
          'application/json': {
            schema: envelopeWith({ enum: e.codes }),
            example: {
              code: e.codes[0],
              msg: e.example,
              data:
                e.status === 422
                  ? { errors: [{ field: 'name', message: 'must be at most 100 characters' }] }
                  : {},
            },
          },
        },
      },
    ]),
  );
  responses.Success = {
    description: 'Success: code 0, msg `success`.',
    content: { 'application/json': { schema: envelopeWith({ const: 0 }, { const: 'success' }) } },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'tocsin',
      version: opts.version,
      summary: 'Serverless alarm task management service',
      description: INFO_DESCRIPTION,
    },
    servers: [{ url: '/', description: 'Relative to where this document is served.' }],
    tags: [...tags].map(([name, description]) => ({ name, ...(description ? { description } : {}) })),
    paths,
    components: {
      schemas: {
        Envelope: ENVELOPE,
        FieldError: {
          type: 'object',
          required: ['field', 'message'],
          properties: { field: { type: 'string' }, message: { type: 'string' } },
        },
      },
      responses,
      headers: {
        RetryAfter: {
          description: 'Seconds to wait before retrying.',
          schema: { type: 'integer', minimum: 1 },
        },
      },
      securitySchemes: SECURITY_SCHEMES,
    },
    'x-error-codes': ERROR_CODES,
    'x-auth-kinds': AUTH_TEXT,
  };
}
