/**
 * The HTTP side of console sessions: the cookies, the same-origin checks and the CSRF token of
 * state-changing requests. The sessions themselves are shared/domain/auth/sessions.ts.
 *
 * - the session id: `__Host-tocsin_session` over HTTPS (always on AWS), `tocsin_session` over the
 *   local runtime's plain HTTP (a browser sets a `__Host-` cookie only with `Secure`, which it keeps
 *   from `http://` pages). HttpOnly (no script reads it), SameSite=Strict (no other site's page or link
 *   sends it), Secure over HTTPS. The `__Host-` prefix makes the browser refuse the cookie unless it
 *   comes from this host itself, with `Secure`, no `Domain` and `Path=/`: a neighbouring subdomain
 *   cannot plant one. Locally the path is the deployment's base path. Max-Age = the session's
 *   absolute lifetime.
 * - `__Host-tocsin_oidc` / `tocsin_oidc`: the state of a single sign-on in flight, for the callback to
 *   check that it returns to the browser that left. SameSite=Lax: the identity provider's redirect
 *   back is a cross-site top-level navigation, which a Strict cookie would not accompany. 10 minutes.
 *
 * Every state-changing request (POST, PUT, DELETE) made with the session cookie must carry the
 * session's CSRF token in `X-CSRF-Token` and an `Origin` equal to the service's own; sign-in requests
 * with an `Origin` from elsewhere are refused too (no signing a victim in as someone else).
 */
import { ForbiddenError, UnauthorizedError } from '../domain/errors.ts';
import { csrfMatches, isSessionId, type SignedInPerson, resolveSession } from '../domain/auth/sessions.ts';
import { serverUrl } from './location.ts';
import { header, type HttpEvent } from './event.ts';
import { overHttps } from './security-headers.ts';

export const SESSION_COOKIE = 'tocsin_session';
export const OIDC_COOKIE = 'tocsin_oidc';
export const CSRF_HEADER = 'x-csrf-token';
/** The prefix of the cookies' names over HTTPS. */
export const HOST_PREFIX = '__Host-';

const COOKIE_VALUE = /^[A-Za-z0-9_-]{1,128}$/;

/** A cookie's name as this request's connection has it (`__Host-` over HTTPS). */
export const cookieName = (event: HttpEvent, name: string): string =>
  overHttps(event) ? `${HOST_PREFIX}${name}` : name;

/** Every value of a cookie the request carries (API Gateway v2 puts them in `event.cookies`), by its name on this connection. */
export function cookieValues(event: HttpEvent, name: string): string[] {
  const wanted = cookieName(event, name);
  const pairs = event.cookies ?? (header(event, 'cookie') ?? '').split(';');
  const values: string[] = [];
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at >= 0 && pair.slice(0, at).trim() === wanted) values.push(pair.slice(at + 1).trim());
  }
  return values;
}

/**
 * A cookie of the request: the first well-formed value among those sent with its name (a browser
 * sends every cookie of the name whose path matches, and a planted malformed one must not hide the
 * real one); '' when every one is malformed; undefined when none was sent.
 */
export function readCookie(event: HttpEvent, name: string): string | undefined {
  const values = cookieValues(event, name);
  if (values.length === 0) return undefined;
  return values.find((v) => COOKIE_VALUE.test(v)) ?? '';
}

/** Whether the request carries the session cookie (well-formed or not). */
export const hasSessionCookie = (event: HttpEvent): boolean => cookieValues(event, SESSION_COOKIE).length > 0;

/** The route's path of a request (`GET /auth/signin` -> `/auth/signin`). */
const routePath = (event: HttpEvent) => (event.routeKey ?? '').replace(/^[A-Z]+ /, '');

/** Where the service is, as this request reached it: `{origin, base}` (base: the mount path, or ''). */
export function serviceLocation(event: HttpEvent): { origin: string; base: string } | undefined {
  const url = serverUrl(event, routePath(event));
  if (!url) return undefined;
  const u = new URL(url);
  return { origin: u.origin, base: u.pathname.replace(/\/+$/, '') };
}

function cookie(
  event: HttpEvent,
  name: string,
  value: string,
  maxAge: number,
  sameSite: 'Strict' | 'Lax',
): string {
  const https = overHttps(event);
  // `__Host-` cookies must have Path=/ (the whole host); locally the base path keeps them to the API.
  const path = https ? '/' : serviceLocation(event)?.base || '/';
  const secure = https ? '; Secure' : '';
  return `${cookieName(event, name)}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=${sameSite}${secure}`;
}

export const sessionCookie = (event: HttpEvent, id: string, maxAge: number) =>
  cookie(event, SESSION_COOKIE, id, maxAge, 'Strict');

export const oidcCookie = (event: HttpEvent, state: string, maxAge: number) =>
  cookie(event, OIDC_COOKIE, state, maxAge, 'Lax');

/** Set-Cookie that removes a cookie (Max-Age 0). */
export const clearedCookie = (event: HttpEvent, name: string) =>
  cookie(event, name, '', 0, name === OIDC_COOKIE ? 'Lax' : 'Strict');

const UNSAFE = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);

export const isUnsafe = (event: HttpEvent) =>
  UNSAFE.has((event.requestContext?.http?.method ?? '').toUpperCase());

/**
 * 403 unless the request's `Origin` is the service's own: required on state-changing requests with
 * the session (`required`), checked when present on sign-in.
 */
export function checkOrigin(event: HttpEvent, required: boolean): void {
  const origin = header(event, 'origin');
  if (origin === undefined && !required) return;
  const own = serviceLocation(event)?.origin;
  if (!origin || !own || origin !== own) {
    throw new ForbiddenError('cross-site request refused: use the console of this service');
  }
}

export interface SignedInRequest {
  person: SignedInPerson;
  /** The session id from the cookie (for sign out and the CSRF token; never logged). */
  id: string;
  hash: string;
}

/**
 * The signed-in person of a request: the session cookie's session, standing; on a state-changing
 * request also the same origin and the session's CSRF token. 401 (clearing the cookie when it names
 * a session that has ended, never for a malformed value), 403 for a cross-site or token-less change.
 */
export async function authenticatePerson(event: HttpEvent): Promise<SignedInRequest> {
  // Every session id sent under the cookie's name is tried in turn: one planted beside the real
  // session's cookie (malformed, or a session that has ended) must neither hide nor clear it. Only
  // when no value is a session id at all nothing is cleared.
  let ended = false;
  let standing: { id: string; session: { hash: string }; person: SignedInPerson } | undefined;
  for (const candidate of cookieValues(event, SESSION_COOKIE).filter(isSessionId).slice(0, 4)) {
    const resolved = await resolveSession(candidate);
    if ('refused' in resolved) ended ||= resolved.refused === 'ended';
    else {
      standing = { id: candidate, ...resolved };
      break;
    }
  }
  if (!standing) {
    if (!ended) throw new UnauthorizedError('not signed in');
    const err = new UnauthorizedError('your session has ended: sign in again');
    err.headers['set-cookie'] = clearedCookie(event, SESSION_COOKIE);
    throw err;
  }
  const { id, person, session } = standing;
  if (isUnsafe(event)) {
    checkOrigin(event, true);
    if (!csrfMatches(id, header(event, CSRF_HEADER))) {
      throw new ForbiddenError(
        `the request lacks the session's CSRF token (${CSRF_HEADER}): reload the console`,
      );
    }
  }
  return { person, id, hash: session.hash };
}

/** The request's source address (API Gateway's, not a header a client could set). */
export const sourceAddress = (event: HttpEvent): string => event.requestContext?.http?.sourceIp ?? 'unknown';
