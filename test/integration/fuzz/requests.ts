import fc from 'fast-check';
import { routes } from '../../../infra/definitions.ts';
import { hmacSign, md5Sign } from '../../../shared/domain/auth/signature.ts';
import { type AppAuth, appHeaders, baseUrl, boundAppHeaders, serviceNow } from '../../support/client.ts';
import { OTHER_APP, TEST_APP } from '../../support/seed.ts';

import { ANY_CONTENT, SPECS } from './specs.ts';
// The on-call schedule routes' specs add themselves to SPECS.
import './schedule-specs.ts';
// ...and the what-if replay routes'.
import './replay-specs.ts';
import { person, task } from './targets.ts';
import { type Body, type Json, noise, serialize, setPath } from './values.ts';
/** The fuzz cases (route, auth poison, field poisons, noise, wire mode) and the requests built from them. */

export interface Req {
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

type AuthPoison =
  | 'none'
  | 'app-missing'
  | 'app-bad-sign'
  | 'app-stale'
  | 'app-unknown'
  | 'app-other'
  | 'app-id-junk'
  | 'task-bad-sign'
  | 'task-stale'
  | 'task-id-junk'
  | 'task-missing'
  | 'session-missing'
  | 'session-forged'
  | 'csrf-missing'
  | 'csrf-wrong'
  | 'origin-other';

const appPoisons: AuthPoison[] = [
  'app-missing',
  'app-bad-sign',
  'app-stale',
  'app-unknown',
  'app-other',
  'app-id-junk',
];
const taskPoisons: AuthPoison[] = ['task-bad-sign', 'task-stale', 'task-id-junk', 'task-missing'];
const sessionPoisons: AuthPoison[] = [
  'session-missing',
  'session-forged',
  'csrf-missing',
  'csrf-wrong',
  'origin-other',
];

async function appAuthHeaders(poison: AuthPoison, app: AppAuth = TEST_APP): Promise<Record<string, string>> {
  const now = await serviceNow();
  switch (poison) {
    case 'app-missing':
      return {};
    case 'app-bad-sign':
      return { ...(await appHeaders(app)), 'x-app-sign': hmacSign('0'.repeat(40), app.id, now) };
    case 'app-stale':
      return appHeaders({ ...app, timestamp: now - 301 });
    case 'app-unknown':
      return appHeaders({ id: 424242, token: app.token });
    case 'app-other':
      return { ...(await appHeaders(OTHER_APP)), 'x-app-id': String(app.id) };
    case 'app-id-junk':
      return { 'x-app-id': '1e20', 'x-app-timestamp': String(now), 'x-app-sign': '\u00ff\u00fe%00' };
    default:
      // Signed bound to the request (API guide §3.1.1) once it is complete: send() does it.
      return { [BIND]: JSON.stringify(app) };
  }
}

/** A header send() replaces by the request-bound app signature of the request as sent. */
const BIND = 'x-test-bind-app';

/** The signed-in browser's cookie, CSRF token and origin, with a poison. */
function sessionHeaders(poison: AuthPoison): Record<string, string> {
  const headers: Record<string, string> = {
    cookie: person.jar.header(),
    'x-csrf-token': person.csrf,
    origin: new URL(baseUrl()).origin,
  };
  if (poison === 'session-missing') delete headers.cookie;
  if (poison === 'session-forged')
    headers.cookie = 'tocsin_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
  if (poison === 'csrf-missing') delete headers['x-csrf-token'];
  if (poison === 'csrf-wrong') headers['x-csrf-token'] = `${person.csrf.slice(0, -1)}x`;
  if (poison === 'origin-other') headers.origin = 'https://evil.example';
  return headers;
}

function poisonTaskAuth(input: Body, poison: AuthPoison, now: number): Body {
  switch (poison) {
    case 'task-bad-sign':
      return { ...input, sign: hmacSign('f'.repeat(40), task.id, now) };
    case 'task-stale':
      return { ...input, timestamp: String(now - 301), sign: hmacSign(task.secret, task.id, now - 301) };
    case 'task-id-junk':
      return { ...input, id: { $raw: '9007199254740993' } };
    case 'task-missing': {
      const { sign: _s, ...rest } = input;
      return rest;
    }
    default:
      return input;
  }
}

function toRequest(
  route: string,
  input: Body,
  source: 'query' | 'json' | 'form',
  headers: Record<string, string>,
  wire: WireMode,
): Req {
  const [method, path] = route.split(' ');
  if (source === 'query' || (source === 'form' && wire === 'query')) {
    const query: Record<string, string> = {};
    for (const [k, v] of Object.entries(input)) query[k] = typeof v === 'string' ? v : serialize(v);
    return { method, path, query, headers };
  }
  if (source === 'form') {
    const form = new URLSearchParams(
      Object.entries(input).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : serialize(v)]),
    );
    return { method, path, body: form.toString(), contentType: 'application/x-www-form-urlencoded', headers };
  }
  const text = serialize(input);
  switch (wire) {
    case 'truncated':
      return {
        method,
        path,
        body: text.slice(0, Math.max(1, text.length - 3)),
        contentType: 'application/json',
        headers,
      };
    case 'wrong-type':
      return { method, path, body: text, contentType: 'text/plain', headers };
    case 'array':
      return { method, path, body: `[${text}]`, contentType: 'application/json', headers };
    case 'huge':
      return {
        method,
        path,
        body: `${text.slice(0, -1)},"pad":"${'p'.repeat(270_000)}"}`,
        contentType: 'application/json',
        headers,
      };
    default:
      return { method, path, body: text, contentType: 'application/json; charset=utf-8', headers };
  }
}

type WireMode = 'plain' | 'truncated' | 'wrong-type' | 'array' | 'huge' | 'query';

interface Case {
  route: string;
  authPoison: AuthPoison;
  fieldPoisons: [number, Json][];
  noise: Record<string, Json>;
  wire: WireMode;
}

export const routeNames = Object.keys(SPECS);
const INTAKE_ROUTES = new Set(
  routeNames.filter((r) => r.includes(' /alarm/') && !/\/alarm\/(report|test)$/.test(r)),
);

export const caseArb: fc.Arbitrary<Case> = fc
  .constantFrom(...routeNames)
  .chain((route) => {
    const spec = SPECS[route];
    const def = routes.find((r) => `${r.method} ${r.path}` === route);
    const auth = INTAKE_ROUTES.has(route)
      ? 'intake'
      : route.startsWith('POST /alarm/')
        ? 'alarm'
        : def?.auth === 'app+task'
          ? 'app+task'
          : def?.auth === 'person'
            ? 'session'
            : 'app';
    const authChoices: AuthPoison[] =
      auth === 'alarm'
        ? ['none']
        : auth === 'app+task'
          ? [...appPoisons, ...taskPoisons]
          : auth === 'session'
            ? sessionPoisons
            : appPoisons;
    const fieldPoison = spec.poisons.length
      ? fc.array(
          fc
            .integer({ min: 0, max: spec.poisons.length - 1 })
            .chain((i) => spec.poisons[i][1].map((v): [number, Json] => [i, v])),
          { minLength: 1, maxLength: 3 },
        )
      : fc.constant([] as [number, Json][]);
    // An alarm report has no app auth: its poison is a bad alarm signature or a field.
    const alarmAuth = fc.constantFrom<AuthPoison>(
      'none',
      'task-bad-sign',
      'task-stale',
      'task-id-junk',
      'task-missing',
    );
    const intakeAuth = fc.constantFrom<AuthPoison>('none', 'task-bad-sign', 'task-id-junk', 'task-missing');
    return fc.record({
      route: fc.constant(route),
      authPoison:
        auth === 'intake'
          ? intakeAuth
          : auth === 'alarm'
            ? alarmAuth
            : fc.oneof(fc.constantFrom<AuthPoison>(...authChoices), fc.constant<AuthPoison>('none')),
      fieldPoisons: fieldPoison,
      noise,
      wire: fc.constantFrom<WireMode>(
        'plain',
        'plain',
        'plain',
        'plain',
        'truncated',
        'wrong-type',
        'array',
        'huge',
        'query',
      ),
    });
  })
  // Every case must carry at least one thing the contract refuses.
  .filter((c) => {
    const spec = SPECS[c.route];
    const isJson = !c.route.startsWith('GET ') && c.route !== 'DELETE /alarmtask';
    // Alarm endpoints read JSON whatever the content type says (curl -d senders).
    const alarm = c.route.startsWith('POST /alarm/');
    const wireRefused = isJson && !['plain', 'query', ...(alarm ? ['wrong-type'] : [])].includes(c.wire);
    const noFieldPoison = spec.poisons.length === 0;
    const alarmOk = c.route === 'POST /alarm/test' && c.authPoison === 'none' && !wireRefused;
    if (alarmOk) return false;
    // Any text, query or form is content there: only a bad credential (or a huge body) refuses it.
    if (ANY_CONTENT.has(c.route)) {
      // (a huge body is refused where the body is raw text; a form is built without wire modes)
      const huge = c.wire === 'huge' && /^POST \/alarm\/(rawbody|arms)$/.test(c.route);
      return c.authPoison !== 'none' || huge;
    }
    if (c.route.endsWith(' /alarm/heartbeat')) return true;
    return (
      c.authPoison !== 'none' ||
      c.fieldPoisons.length > 0 ||
      wireRefused ||
      (noFieldPoison && c.route === 'PUT /alarmtask/start')
    );
  });

export async function build(c: Case): Promise<Req> {
  const spec = SPECS[c.route];
  const base = await spec.valid();
  const now = await serviceNow();
  // A query string has a size limit of its own (API Gateway and the local server answer 414/431
  // before any handler runs): noise in a query stays short.
  const inQuery = base.source === 'query' || c.wire === 'query';
  const noise = Object.fromEntries(
    Object.entries(c.noise).filter(([, v]) => !inQuery || serialize(v).length < 200),
  );
  let input: Body = { ...noise, ...base.input };
  for (const [i, value] of c.fieldPoisons) input = setPath(input, spec.poisons[i][0], value);
  if (base.auth === 'app+task') input = poisonTaskAuth(input, c.authPoison, now);
  if (base.auth === 'alarm') {
    if (c.authPoison === 'task-bad-sign') input.sign = hmacSign('0'.repeat(40), task.id, now);
    if (c.authPoison === 'task-stale') {
      input.timestamp = now - 1801;
      input.sign = hmacSign(task.token, task.id, now - 1801);
    }
    if (c.authPoison === 'task-id-junk') input.taskid = { $raw: '1e20' };
    if (c.authPoison === 'task-missing') delete input.sign;
  }
  const headers =
    base.auth === 'app' || base.auth === 'app+task'
      ? await appAuthHeaders(c.authPoison, base.app)
      : base.auth === 'session'
        ? sessionHeaders(c.authPoison)
        : {};
  const wire = base.source === 'json' || c.wire === 'query' ? c.wire : 'plain';
  const req = toRequest(
    c.route,
    input,
    base.source,
    headers,
    base.source === 'json' && wire === 'query' ? 'plain' : wire,
  );
  if (base.query) {
    const q: Record<string, string> = { ...base.query };
    if (c.authPoison === 'task-bad-sign') q.sign = md5Sign('0'.repeat(40), task.id, q.timestamp);
    if (c.authPoison === 'task-id-junk') q.taskid = '1e20';
    if (c.authPoison === 'task-missing') delete q.sign;
    req.query = { ...req.query, ...q };
  }
  return req;
}

export async function send(r: Req): Promise<{ status: number; text: string }> {
  const url = new URL(r.path, baseUrl());
  for (const [k, v] of Object.entries(r.query ?? {})) url.searchParams.set(k, v);
  const { [BIND]: bind, ...headers }: Record<string, string> = { ...(r.headers ?? {}) };
  if (r.contentType) headers['content-type'] = r.contentType;
  if (bind) {
    const request = {
      method: r.method,
      path: url.pathname,
      rawQuery: url.search.slice(1),
      body: r.body ?? '',
    };
    Object.assign(headers, await boundAppHeaders(JSON.parse(bind) as AppAuth, request));
  }
  const res = await fetch(url, { method: r.method, headers, body: r.body });
  return { status: res.status, text: await res.text() };
}
