/**
 * The console's API client. The person signs in with an account and a password (or single sign-on);
 * the service answers with an HttpOnly session cookie, which the browser sends with every call to
 * this origin and no script can read. Calls that change something carry the session's CSRF token,
 * which the page gets from GET /auth/session and keeps in memory only: nothing is kept in
 * localStorage or sessionStorage, nothing in the URL. The service takes the acting user from the
 * session, so no call names one.
 */

import type {
  FieldError,
  SessionAnswer as Standing,
  SessionState,
  SignedInAnswer,
  SignedInPerson,
} from './types.ts';

export type { FieldError };

/** The signed-in person (the API's `SignedInPerson`). */
export type SessionUser = SignedInPerson;

export interface Session {
  person: SessionUser;
  csrf: string;
}

let current: Session | undefined;

/** The signed-in person's session, as this page knows it. */
export function currentSession(): Session | undefined {
  return current;
}

/** Why the page went back to the sign-in page (shown there). */
export type SignOutReason = 'signed-out' | 'ended';

/** Forget the session and show the sign-in page. */
export function dropSession(reason: SignOutReason = 'signed-out'): void {
  current = undefined;
  window.dispatchEvent(new CustomEvent('tocsin:signout', { detail: reason }));
}

/** The API's base: the page is served at `<base>/console`. */
export const BASE = location.pathname.replace(/\/console\/?$/, '');

// ---- The service's clock ------------------------------------------------------------------------

function initialOffset(): number {
  const meta = document.querySelector('meta[name="tocsin-now"]')?.getAttribute('content');
  const serverMs = Number(meta);
  return Number.isFinite(serverMs) && serverMs > 0 ? serverMs - Date.now() : 0;
}

const offsetMs = initialOffset();

/** The service's now, in Unix milliseconds. */
export function serviceNowMs(): number {
  return Date.now() + offsetMs;
}

export function serviceNow(): number {
  return Math.floor(serviceNowMs() / 1000);
}

// ---- Calls --------------------------------------------------------------------------------------

/** A refused or failed call: the envelope's code and message (status 0: the service was not reached). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    readonly msg: string,
    readonly fields: FieldError[] = [],
    readonly data?: Record<string, unknown>,
  ) {
    super(msg);
  }
}

type Query = Record<string, string | number | undefined>;

/** What an envelope answered with code 0 carries; any other code is thrown as an ApiError. */
async function send<T>(method: string, path: string, query: Query | undefined, body: unknown): Promise<T> {
  const url = new URL(`${BASE}${path}`, location.origin);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  }
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && current) headers['x-csrf-token'] = current.csrf;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'same-origin',
      referrerPolicy: 'no-referrer',
    });
  } catch (err) {
    throw new ApiError(0, 0, `cannot reach the service (${(err as Error).message})`);
  }
  let envelope: { code?: number; msg?: string; data?: unknown };
  try {
    envelope = (await res.json()) as typeof envelope;
  } catch {
    throw new ApiError(res.status, res.status, `the service answered HTTP ${res.status} without an envelope`);
  }
  if (envelope.code !== 0) {
    const data = (envelope.data ?? {}) as { errors?: FieldError[] };
    throw new ApiError(
      res.status,
      envelope.code ?? res.status,
      envelope.msg ?? `HTTP ${res.status}`,
      Array.isArray(data.errors) ? data.errors : [],
      data,
    );
  }
  return envelope.data as T;
}

/**
 * One call as the signed-in person. A 401 means the session has ended (expired, signed out
 * elsewhere): the page goes back to the sign-in page and says so.
 */
export async function call<T>(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  opts: { query?: Query; body?: unknown } = {},
): Promise<T> {
  try {
    return await send<T>(method, path, opts.query, opts.body);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && current) dropSession('ended');
    throw err;
  }
}

export const get = <T>(path: string, query: Query = {}) => call<T>('GET', path, { query });

// ---- Signing in and out -------------------------------------------------------------------------

/** What POST /auth/signin and PUT /auth/password answer. */
type SessionAnswer = Standing | SignedInAnswer;

/** Whether single sign-on is offered (told by the service when nobody is signed in). */
export interface SignedOut {
  sso: boolean;
}

/**
 * The session this browser holds (the cookie), if it still stands; else whether SSO is offered. The
 * service answers "nobody" when the browser holds no session cookie, so a visit before signing in
 * logs no refused request; a cookie whose session ended is refused (401).
 */
export async function resumeSession(): Promise<(Session & SignedOut) | SignedOut> {
  try {
    const s = await send<SessionState>('GET', '/auth/session', undefined, undefined);
    if (s.person === null) return { sso: s.sso };
    current = { person: s.person, csrf: s.csrf_token };
    return { ...current, sso: s.sso };
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return { sso: err.data?.sso === true };
    throw err;
  }
}

export async function signIn(account: string, password: string): Promise<Session> {
  const s = await send<SessionAnswer>('POST', '/auth/signin', undefined, { account, password });
  current = { person: s.person, csrf: s.csrf_token };
  return current;
}

/** Ends this session, or with `everywhere` every session of the person. */
export async function signOut(everywhere = false): Promise<void> {
  try {
    await send('POST', '/auth/signout', undefined, everywhere ? { everywhere: 1 } : {});
  } finally {
    dropSession('signed-out');
  }
}

/** Changes the person's password: every other session ends, this one continues with a new cookie. */
export async function changePassword(currentPassword: string, password: string): Promise<void> {
  const s = await send<SessionAnswer>('PUT', '/auth/password', undefined, {
    current: currentPassword,
    password,
  });
  current = { person: s.person, csrf: s.csrf_token };
}

/**
 * A page of a listing, filled: the service may answer a short page with a cursor (a cap on what one
 * request reads), so this follows `next_cursor` while the rows are fewer than `limit`, at most
 * `maxCalls` requests. "Nothing found" is only true once `next_cursor` is empty.
 */
export async function getFilled<T extends { next_cursor: string }>(
  path: string,
  query: Query,
  field: keyof T,
  limit: number,
  maxCalls = 8,
): Promise<T> {
  let page = await get<T>(path, { ...query, limit });
  const rows = [...(page[field] as unknown[])];
  for (let n = 1; n < maxCalls && rows.length < limit && page.next_cursor; n++) {
    page = await get<T>(path, { ...query, limit: limit - rows.length, cursor: page.next_cursor });
    rows.push(...(page[field] as unknown[]));
  }
  return { ...page, [field]: rows };
}
export const put = <T>(path: string, body: Record<string, unknown>) => call<T>('PUT', path, { body });
export const post = <T>(path: string, body: Record<string, unknown>) => call<T>('POST', path, { body });
/** DELETE with its parameters in the query (the DELETE routes read a form body or the query). */
export const del = <T>(path: string, query: Query) => call<T>('DELETE', path, { query });
