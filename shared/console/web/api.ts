/**
 * The console's API client. Every call is signed in the browser exactly as any client signs it
 * (behavior 3.1): X-App-Id, X-App-Timestamp and X-App-Sign = hex HMAC-SHA256(key = app token,
 * message = appid + "&" + timestamp), computed with WebCrypto. The timestamp is the service's clock,
 * not this computer's: the page carries the service's time when it loads, and is asked again when a
 * signature is refused as expired (a laptop whose clock is off, or the local stack's test clock).
 *
 * The session (app id, token, acting user) lives in this tab's sessionStorage only: no cookie, no
 * localStorage, nothing in the URL.
 */

export interface SessionUser {
  uid: number;
  username: string;
  role: number;
}

export interface Session {
  appId: number;
  token: string;
  uid: number;
  user: SessionUser;
}

const SESSION_KEY = 'tocsin.console.session';

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(SESSION_KEY);
    if (!raw) return undefined;
    const s = JSON.parse(raw) as Session;
    if (
      Number.isSafeInteger(s.appId) &&
      typeof s.token === 'string' &&
      Number.isSafeInteger(s.uid) &&
      s.user
    ) {
      return s;
    }
  } catch {
    // unreadable: signed out
  }
  return undefined;
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(SESSION_KEY);
  window.dispatchEvent(new Event('tocsin:signout'));
}

/** The API's base: the page is served at `<base>/console`. */
export const BASE = location.pathname.replace(/\/console\/?$/, '');

// ---- The service's clock ------------------------------------------------------------------------

function initialOffset(): number {
  const meta = document.querySelector('meta[name="tocsin-now"]')?.getAttribute('content');
  const serverMs = Number(meta);
  return Number.isFinite(serverMs) && serverMs > 0 ? serverMs - Date.now() : 0;
}

let offsetMs = initialOffset();

/** The service's now, in Unix milliseconds. */
export function serviceNowMs(): number {
  return Date.now() + offsetMs;
}

export function serviceNow(): number {
  return Math.floor(serviceNowMs() / 1000);
}

/** Reads the service's clock again (the console page's `x-service-time`, else its `Date` header). */
export async function syncClock(): Promise<void> {
  const sent = Date.now();
  const res = await fetch(`${BASE}/console`, { cache: 'no-store', credentials: 'omit' });
  const received = Date.now();
  void res.body?.cancel();
  const exact = Number(res.headers.get('x-service-time'));
  const date = Date.parse(res.headers.get('date') ?? '');
  const server = Number.isFinite(exact) && exact > 0 ? exact : date;
  if (Number.isFinite(server)) offsetMs = server - (sent + received) / 2;
}

// ---- Signing ------------------------------------------------------------------------------------

const encoder = new TextEncoder();
let cachedKey: { token: string; key: Promise<CryptoKey> } | undefined;

function hmacKey(token: string): Promise<CryptoKey> {
  if (cachedKey?.token !== token) {
    if (!crypto.subtle) {
      throw new ApiError(
        0,
        0,
        'this page is not in a secure context (HTTPS or localhost), so it cannot sign',
      );
    }
    const key = crypto.subtle.importKey(
      'raw',
      encoder.encode(token),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    cachedKey = { token, key };
  }
  return cachedKey.key;
}

export async function hmacHex(token: string, message: string): Promise<string> {
  const sig = await crypto.subtle.sign('HMAC', await hmacKey(token), encoder.encode(message));
  return Array.from(new Uint8Array(sig), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function signedHeaders(appId: number, token: string): Promise<Record<string, string>> {
  const ts = String(serviceNow());
  return {
    'x-app-id': String(appId),
    'x-app-timestamp': ts,
    'x-app-sign': await hmacHex(token, `${appId}&${ts}`),
  };
}

// ---- Calls --------------------------------------------------------------------------------------

export interface FieldError {
  field: string;
  message: string;
}

/** A refused or failed call: the envelope's code and message (status 0: the service was not reached). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    readonly msg: string,
    readonly fields: FieldError[] = [],
  ) {
    super(msg);
  }
}

export const EXPIRED = 'signature was expired';

type Query = Record<string, string | number | undefined>;

export interface Credentials {
  appId: number;
  token: string;
}

async function once<T>(
  creds: Credentials,
  method: string,
  path: string,
  query: Query | undefined,
  body: unknown,
): Promise<T> {
  const url = new URL(`${BASE}${path}`, location.origin);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  }
  const headers = await signedHeaders(creds.appId, creds.token);
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
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
    );
  }
  return envelope.data as T;
}

/**
 * One signed call. A signature refused as expired is retried once after reading the service's
 * clock again; a second refusal is the caller's to show.
 */
export async function call<T>(
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  opts: { query?: Query; body?: unknown; creds?: Credentials } = {},
): Promise<T> {
  const creds = opts.creds ?? loadSession();
  if (!creds) throw new ApiError(401, 401, 'not signed in');
  try {
    return await once<T>(creds, method, path, opts.query, opts.body);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401 && err.msg === EXPIRED)) throw err;
    await syncClock().catch(() => undefined);
    return once<T>(creds, method, path, opts.query, opts.body);
  }
}

/** The acting user of the session (every read names it). */
export function actingUid(): number {
  return loadSession()?.uid ?? 0;
}

export const get = <T>(path: string, query: Query = {}) =>
  call<T>('GET', path, { query: { uid: actingUid(), ...query } });

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
