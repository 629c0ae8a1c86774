/**
 * The input of each route in the document: query parameters and request bodies, from the schema its
 * handler declared to the factory (plus the task-auth fields the factory checks), or, where the
 * handler validates in its use case (the task create/update bodies, the alarm report, the monitor
 * adapters), from INPUT_DOCS: the use case's own schema objects (imported, never copied) or, for the
 * adapters whose bodies are the monitors' formats, their description. The examples are the routes'
 * sample requests.
 *
 * The handlers' schemas are written for ajv in the keywords JSON Schema draft-07 (ajv's default) and
 * 2020-12 (OpenAPI 3.1's dialect) share, so they go into the document as they are; the document's
 * tests compile every one of them as 2020-12 in ajv's strict mode.
 */
import { INTAKE_PARAMS } from '../../shared/domain/alarms/adapters.ts';
import { TASK_ID, TIMESTAMP } from '../../shared/domain/alarms/report.ts';
import { MAX_CTN_DEPTH, reportSchema } from '../../shared/domain/alarms/report-schemas.ts';
import { createTaskSchema, taskConfigSchema } from '../../shared/domain/tasks/schemas.ts';
import { TASK_AUTH_SCHEMA } from '../../shared/http/handler.ts';
import { authOf } from './auth.ts';
import type { RouteDoc } from './routes.ts';

type Json = Record<string, unknown>;

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
}

/** A claim link's token (the use case checks it: an invalid one gets the page with the reason). */
const CLAIM_TOKEN = {
  type: 'string',
  maxLength: 80,
  pattern: '^[A-Za-z0-9_-]+$',
  description: "The link's token (base64url), as the message carried it.",
};

export const INPUT_DOCS: Record<string, InputDoc> = {
  'functions/http/claim/get-claim.ts': {
    schema: { type: 'object', required: ['t'], properties: { t: CLAIM_TOKEN } },
  },
  'functions/http/claim/post-claim.ts': {
    schema: {
      type: 'object',
      required: ['t', 'n'],
      properties: {
        t: CLAIM_TOKEN,
        n: {
          type: 'string',
          description: 'The page nonce of the form (`offer.page_nonce`): good for 10 to 20 minutes.',
        },
      },
    },
  },
  'functions/http/alarmtask/store-task.ts': { schema: createTaskSchema },
  'functions/http/alarmtask/update-task.ts': { schema: taskConfigSchema },
  // The named paths are copied from the body into the task, then the whole is checked.
  'functions/http/alarmtask/update-task-fields.ts': { also: { properties: taskConfigSchema.properties } },
  'functions/alarm/report-alarm.ts': {
    schema: mergeObjects(
      mergeObjects(ALARM_AUTH_SCHEMA, { required: ['ctn'], properties: { ctn: CTN_SCHEMA } }),
      reportSchema,
    ),
  },
  'functions/alarm/test-alarm.ts': {
    schema: ALARM_AUTH_SCHEMA,
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
  },
  'functions/alarm/intake-jsonbody.ts': {
    contents: { 'application/json': { ...CTN_SCHEMA, description: 'The whole body is the alarm content.' } },
    bodyRequired: true,
  },
  'functions/alarm/intake-rawbody.ts': {
    freeQuery: 'Without a body (GET): added to the alarm content `{body: ""}`.',
    contents: {
      'text/plain': { type: 'string', minLength: 1, description: 'Any text; the alarm content is `{body}`.' },
    },
    bodyRequired: true,
  },
  'functions/alarm/intake-falcon.ts': {
    freeQuery: 'The alarm content (Open-Falcon callback parameters, e.g. endpoint, metric, status).',
    contents: { 'application/x-www-form-urlencoded': FORM_FIELDS },
  },
  'functions/alarm/intake-aliyun.ts': {
    contents: {
      'application/x-www-form-urlencoded': {
        ...FORM_FIELDS,
        description: "CloudMonitor's alarm callback fields (alertName, expression, dimensions, ...).",
      },
    },
    bodyRequired: true,
  },
};

/** Whether a route's input is checked against a schema (by the factory or the use case). */
export const validatesInput = (doc: RouteDoc): boolean =>
  doc.spec.schema !== undefined || INPUT_DOCS[doc.route.handler]?.schema !== undefined;

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
  return withAuth;
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
export function inputOf(doc: RouteDoc): { parameters?: Json[]; requestBody?: Json; extra?: Json } {
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
    const contents = docs.contents;
    return {
      ...(parameters.length ? { parameters } : {}),
      ...(doc.route.method === 'GET'
        ? {}
        : { requestBody: { required: docs.bodyRequired === true, content: content(contents, sample) } }),
    };
  }
  return parameters.length ? { parameters } : {};
}
