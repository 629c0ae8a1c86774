/**
 * How each route authenticates, in the document: its `x-tocsin-auth` kind, the security schemes and
 * requirements, and the text of each kind (`x-auth-kinds`, shown by the reference page).
 */
import type { RouteDoc } from './routes.ts';

type Json = Record<string, unknown>;

/** The factory's auth kinds, with the route table's `alarm` split by where the credentials travel. */
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

export const SECURITY_SCHEMES = {
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
      'hmac_sha256(key = app token, message = appid + "&" + timestamp), or the legacy md5(appid + "&" + timestamp + token); lower-case hex. With X-App-Nonce: the request-bound signature of API guide §3.1.1.',
  },
  AppNonce: {
    type: 'apiKey',
    in: 'header',
    name: 'X-App-Nonce',
    description:
      'The request-bound signature (API guide §3.1.1): 16 to 64 characters of A-Z a-z 0-9 _ -, new for every request; X-App-Sign is then hmac_sha256(app token, the signed text over the method, path, sorted query, body digest, app id, timestamp and nonce). Required of apps that opted in (or by APP_REQUEST_SIGNATURE).',
  },
  Session: {
    type: 'apiKey',
    in: 'cookie',
    name: '__Host-tocsin_session',
    description:
      'A signed-in person (POST /auth/signin, or single sign-on): the HttpOnly session cookie, `__Host-tocsin_session` over HTTPS (`tocsin_session` on the local runtime). The person is the acting user; `uid` / `created_by` in the request are ignored.',
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
const APP_BOUND_SECURITY = { AppId: [], AppTimestamp: [], AppNonce: [], AppSign: [] };

const SECURITY: Record<AuthDoc, Json[]> = {
  none: [],
  app: [APP_SECURITY, APP_BOUND_SECURITY],
  'app+task': [APP_SECURITY, APP_BOUND_SECURITY],
  'app|person': [APP_SECURITY, APP_BOUND_SECURITY, { Session: [] }],
  reader: [APP_SECURITY, APP_BOUND_SECURITY, { Session: [] }],
  admin: [APP_SECURITY, APP_BOUND_SECURITY, { Session: [] }],
  person: [{ Session: [] }],
  // The credentials are body fields (taskid, timestamp, sign): no security scheme describes them.
  'alarm-body': [],
  'intake-query': [
    { IntakeTaskId: [], IntakeBearer: [] },
    { IntakeTaskId: [], IntakeToken: [] },
    { IntakeTaskId: [], IntakeTimestamp: [], IntakeSign: [] },
  ],
};

/** The security requirements of a route: a change made with the session cookie also carries the CSRF token. */
export function securityOf(doc: Pick<RouteDoc, 'route' | 'spec'>): Json[] {
  return SECURITY[authOf(doc)].map((req) =>
    'Session' in req && doc.route.method !== 'GET' ? { ...req, CsrfToken: [] } : req,
  );
}

export const AUTH_TEXT: Record<AuthDoc, string> = {
  none: 'None.',
  app: 'Application authentication: headers X-App-Id, X-App-Timestamp, X-App-Sign (API guide §3.1), with X-App-Nonce the request-bound signature (§3.1.1).',
  'app+task':
    'Application authentication (headers) and task authentication: `id`, `timestamp`, `sign` = hmac_sha256(task secret, id + "&" + timestamp) or the legacy md5(id + "&" + timestamp + secret), in the query (GET), the JSON body (PUT) or a form body or the query (DELETE) (API guide §3.2).',
  'alarm-body':
    'Alarm authentication: `taskid`, `timestamp`, `sign` in the JSON body, signed with the task token (API guide §3.3).',
  'intake-query':
    '`taskid` in the query and the intake token (`Authorization: Bearer <token>` or `token` in the query), or the fixed signature (`timestamp` and `sign` in the query) when the task turned it on.',
  'app|person':
    'Application authentication (headers), or a signed-in person (the session cookie), who is then the acting user (`created_by`). With STRICT_APP_GRANTS the app needs the grant `read` (show) or `operate` (operations).',
  reader:
    "A signed-in person (the session cookie), the acting user whatever `uid` says; or application authentication by an app holding the grant `read` (`operate` for the routes that change something; `admin` includes both), acting as the `uid` it names (403 naming the grant otherwise; an app bound to users may name only them). With `admin` the app has the super administrator's powers.",
  admin:
    'A signed-in person with role 9 (the session cookie); or application authentication by an app holding the grant `admin` (403 naming the grant otherwise).',
  person:
    "A signed-in person: the session cookie, and on a change the session's CSRF token (`X-CSRF-Token`) and this service's `Origin`.",
};
