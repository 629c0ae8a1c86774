/**
 * The OpenAPI 3.1 document of the HTTP API, assembled from the routes (scripts/openapi/routes.ts):
 * each operation's auth, input, success answer (its `data` schema, from the type the handler returns)
 * and refusals (the envelope codes it can answer). Pure: the generator hands in what it read.
 */
import { AUTH_TEXT, authOf, SECURITY_SCHEMES, securityOf } from './auth.ts';
import { claimResponses } from './claim.ts';
import { inputOf, validatesInput } from './inputs.ts';
import { descriptionOf, operationId, summaryOf, tagOf } from './naming.ts';
import { ERROR_CODES, REFUSALS, type RefusalName, refusalsOf } from './refusals.ts';
import type { DataSchema } from './responses.ts';
import { type RouteDoc, routeKey } from './routes.ts';

type Json = Record<string, unknown>;

const ENVELOPE = {
  type: 'object',
  required: ['code', 'msg', 'data'],
  additionalProperties: false,
  properties: {
    code: { type: 'integer', description: '0 on success, else the error code (API guide §2.1).' },
    msg: {
      type: 'string',
      description: '`success`, or a lower-case English message naming the field or id.',
    },
    data: { type: 'object', description: 'The answer; `{}` when there is nothing to return.' },
  },
};

const SHARED_SCHEMAS: Record<string, Json> = {
  Envelope: ENVELOPE,
  FieldError: {
    type: 'object',
    required: ['field', 'message'],
    additionalProperties: false,
    properties: { field: { type: 'string' }, message: { type: 'string' } },
  },
  ValidationErrors: {
    type: 'object',
    required: ['errors'],
    additionalProperties: false,
    properties: {
      errors: {
        type: 'array',
        items: { $ref: '#/components/schemas/FieldError' },
        description: 'Every problem found, the first one also in `msg`.',
      },
    },
  },
};

/** The envelope with its code (and msg, data) narrowed. */
const envelopeWith = (code: Json, msg?: Json, data?: Json): Json => ({
  allOf: [
    { $ref: '#/components/schemas/Envelope' },
    { properties: { code, ...(msg ? { msg } : {}), ...(data ? { data } : {}) } },
  ],
});

/** The envelope of a refusal with one of `codes`. */
const refusalEnvelope = (codes: number[]): Json =>
  envelopeWith(
    { enum: codes },
    undefined,
    codes.includes(422) ? { $ref: '#/components/schemas/ValidationErrors' } : undefined,
  );

/** The refusals the SDK endpoints answer with HTTP 200 (all but 413 and 5xx, API guide §2.2). */
const foldedInto200 = (doc: RouteDoc, r: RefusalName) =>
  doc.spec.refusalsAsHttp200 && REFUSALS[r].status !== 413 && REFUSALS[r].status < 500;

function responsesOf(doc: RouteDoc, data: DataSchema | undefined): Json {
  // A claim link answers browsers with a page, refusals included.
  if (doc.route.path === '/claim') return claimResponses(doc.route.method);
  const refusals = refusalsOf(doc, validatesInput(doc));
  const responses: Json = {};
  if (doc.spec.rawResponse && doc.route.path.startsWith('/auth/oidc/')) {
    responses['303'] = {
      description:
        'A browser redirect: to the OpenID Connect provider (start), to the console signed in, or to its sign-in page with the reason of a refusal (`#signin-error=...`).',
      headers: { Location: { schema: { type: 'string' } } },
    };
  } else if (doc.spec.rawResponse) {
    const type = doc.route.path.endsWith('.json')
      ? 'application/json'
      : doc.route.path.endsWith('.ics')
        ? 'text/calendar'
        : 'text/html';
    const what = {
      '/openapi.json': 'The OpenAPI document.',
      '/docs': 'The reference page.',
      '/schedule/ical.ics': 'The iCalendar feed (RFC 5545) of the final shifts for 90 days.',
    };
    responses['200'] = {
      description: what[doc.route.path as keyof typeof what] ?? 'The page.',
      content: { [type]: { schema: type === 'application/json' ? { type: 'object' } : { type: 'string' } } },
    };
  } else {
    if (!data) throw new Error(`${routeKey(doc)}: no schema of its data`);
    const msg = doc.spec.successMessage ?? 'success';
    const success = envelopeWith({ const: 0 }, { const: msg }, data);
    const folded = refusals.filter((r) => foldedInto200(doc, r));
    if (folded.length) {
      const codes = folded.flatMap((r) => REFUSALS[r].codes);
      responses['200'] = {
        description: `Success (code 0, msg \`${msg}\`) or a refusal, whose code travels in the envelope only: ${codes.join(', ')} (API guide §2.2).`,
        ...(folded.some((r) => REFUSALS[r].status === 429)
          ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }
          : {}),
        content: { 'application/json': { schema: { anyOf: [success, refusalEnvelope(codes)] } } },
      };
    } else {
      responses['200'] = {
        description: `Success: code 0, msg \`${msg}\`.`,
        content: { 'application/json': { schema: success } },
      };
    }
  }
  for (const r of refusals) {
    if (foldedInto200(doc, r)) continue;
    const { status } = REFUSALS[r];
    if (responses[String(status)]) throw new Error(`${doc.route.handler}: two refusals with HTTP ${status}`);
    responses[String(status)] = { $ref: `#/components/responses/${r}` };
  }
  return responses;
}

function operationOf(doc: RouteDoc, data: DataSchema | undefined): Json {
  // The comment whole, unless it only names the route.
  const description = descriptionOf(doc.comment) ? (doc.comment ?? '').trim() : '';
  const { parameters, requestBody, extra } = inputOf(doc);
  return {
    operationId: operationId(doc.route),
    summary: summaryOf(doc),
    ...(description ? { description } : {}),
    tags: [tagOf(doc).name],
    security: securityOf(doc),
    'x-tocsin-auth': authOf(doc),
    // The grant an app needs (reader routes; on the workflow routes only with STRICT_APP_GRANTS).
    ...(doc.spec.grant ? { 'x-tocsin-grant': doc.spec.grant } : {}),
    ...(parameters?.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: responsesOf(doc, data),
    ...extra,
  };
}

/** A refusal as a response component: its statuses' envelope and an example. */
function refusalResponse(name: RefusalName): Json {
  const e = REFUSALS[name];
  return {
    description: `${e.description} Codes: ${e.codes.join(', ')}.`,
    ...(e.status === 429 ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } } : {}),
    content: {
      'application/json': {
        schema: refusalEnvelope(e.codes),
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

export interface BuildInput {
  version: string;
  /** The schema of each route's success `data`, by route key (every route but the raw ones). */
  data: Map<string, DataSchema>;
  /** The component schemas the data schemas refer to. */
  schemas: Record<string, Json>;
}

/** The OpenAPI 3.1 document of `docs` (in their order; one path item per path). */
export function buildOpenApi(docs: RouteDoc[], input: BuildInput): Json {
  const paths: Record<string, Json> = {};
  const tags = new Map<string, string | undefined>();
  for (const doc of docs) {
    paths[doc.route.path] ??= {};
    const item = paths[doc.route.path];
    const method = doc.route.method.toLowerCase();
    if (item[method]) throw new Error(`${routeKey(doc)} is in the route table twice`);
    item[method] = operationOf(doc, input.data.get(routeKey(doc)));
    const tag = tagOf(doc);
    if (!tags.has(tag.name)) tags.set(tag.name, tag.description);
  }
  for (const name of Object.keys(input.schemas)) {
    if (SHARED_SCHEMAS[name]) throw new Error(`a response type is named ${name}, a schema of the document`);
  }
  const names = Object.keys(REFUSALS) as RefusalName[];
  return {
    openapi: '3.1.0',
    info: {
      title: 'tocsin',
      version: input.version,
      summary: 'Serverless alarm task management service',
      description: INFO_DESCRIPTION,
    },
    servers: [{ url: '/', description: 'Relative to where this document is served.' }],
    tags: [...tags].map(([name, description]) => ({ name, ...(description ? { description } : {}) })),
    paths,
    components: {
      schemas: { ...SHARED_SCHEMAS, ...input.schemas },
      responses: Object.fromEntries(names.map((n) => [n, refusalResponse(n)])),
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
