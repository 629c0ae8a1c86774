import { inject } from 'vitest';
import { newNonce, signRequest } from '../../shared/domain/auth/request-signature.ts';
import { hmacSign, md5Sign } from '../../shared/domain/auth/signature.ts';
import { TEST_APP } from './seed.ts';

/** A client that signs like the service's real callers do (API guide §3). */
export interface Envelope<T = Record<string, unknown>> {
  status: number;
  code: number;
  msg: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
  data: T & Record<string, any>;
}

export function baseUrl(): string {
  return inject('stack').url;
}

/** The service's clock (the test clock may have moved it). */
export async function serviceNow(): Promise<number> {
  const res = await fetch(`${baseUrl()}/_local/clock`);
  const body = (await res.json()) as { data: { now: number } };
  return body.data.now;
}

/** Moves the service's clock forward and runs due work. */
export async function advanceClock(seconds: number): Promise<number> {
  const res = await fetch(`${baseUrl()}/_local/clock`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ advance_seconds: seconds }),
  });
  const body = (await res.json()) as { data: { now: number } };
  return body.data.now;
}

/**
 * A timestamp for the monitors' fixed signature: signed a month ago (it stays valid
 * FIXED_SIGN_MAX_DAYS, 365 by default, after it).
 */
export const FIXED_SIGN_TIMESTAMP = Math.floor(Date.now() / 1000) - 30 * 86_400;

export interface AppAuth {
  id: number;
  token: string;
  /** Override the timestamp (e.g. a stale one). */
  timestamp?: number;
  /**
   * The interface's signature of `appid&timestamp` (`hmac`, `md5`); by default requests are signed
   * bound to themselves (API guide §3.1.1), as `npm run call` signs them.
   */
  scheme?: 'hmac' | 'md5' | 'request';
  /** Override the signature. */
  sign?: string;
}

/** The interface's app headers (API guide §3.1): a signature of `appid&timestamp`, valid on any route. */
export async function appHeaders(auth: AppAuth = TEST_APP): Promise<Record<string, string>> {
  const ts = auth.timestamp ?? (await serviceNow());
  const sign = auth.sign ?? (auth.scheme === 'md5' ? md5Sign : hmacSign)(auth.token, auth.id, ts);
  return { 'x-app-id': String(auth.id), 'x-app-timestamp': String(ts), 'x-app-sign': sign };
}

/** Request-bound app headers (API guide §3.1.1) for one request. */
export async function boundAppHeaders(
  auth: AppAuth,
  request: { method: string; path: string; rawQuery: string; body: string },
): Promise<Record<string, string>> {
  const ts = String(auth.timestamp ?? (await serviceNow()));
  const nonce = newNonce();
  const sign =
    auth.sign ??
    signRequest(auth.token, { ...request, body: Buffer.from(request.body, 'utf8') }, auth.id, ts, nonce);
  return { 'x-app-id': String(auth.id), 'x-app-timestamp': ts, 'x-app-nonce': nonce, 'x-app-sign': sign };
}

/** Task-auth parameters for a task (API guide §3.2). */
export async function taskAuth(
  task: { id: number; secret: string },
  opts: { timestamp?: number; scheme?: 'hmac' | 'md5' } = {},
): Promise<{ id: number; timestamp: string; sign: string }> {
  const ts = opts.timestamp ?? (await serviceNow());
  const sign = (opts.scheme === 'md5' ? md5Sign : hmacSign)(task.secret, task.id, ts);
  return { id: task.id, timestamp: String(ts), sign };
}

export interface RequestOptions {
  query?: Record<string, string | number>;
  json?: unknown;
  form?: Record<string, string | number>;
  body?: string;
  headers?: Record<string, string>;
  app?: AppAuth | null;
}

export async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<Envelope<T>> {
  const url = new URL(path, baseUrl());
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(
      Object.entries(opts.form).map(([k, v]): [string, string] => [k, String(v)]),
    ).toString();
  } else if (opts.body !== undefined) {
    body = opts.body;
  }
  if (opts.app !== null) {
    const auth: AppAuth = opts.app ?? TEST_APP;
    const bound = auth.scheme === 'request' || (auth.scheme === undefined && auth.sign === undefined);
    Object.assign(
      headers,
      bound
        ? await boundAppHeaders(auth, {
            method,
            path: url.pathname.slice(new URL(baseUrl()).pathname.replace(/\/+$/, '').length) || '/',
            rawQuery: url.search.slice(1),
            body: body ?? '',
          })
        : await appHeaders(auth),
    );
  }
  Object.assign(headers, opts.headers ?? {});
  const res = await fetch(url, { method, headers, body });
  const parsed = (await res.json()) as { code: number; msg: string; data: T };
  return { status: res.status, code: parsed.code, msg: parsed.msg, data: parsed.data as Envelope<T>['data'] };
}

export const api = {
  get: <T = Record<string, unknown>>(path: string, opts?: RequestOptions) => call<T>('GET', path, opts),
  post: <T = Record<string, unknown>>(path: string, json: unknown, opts?: RequestOptions) =>
    call<T>('POST', path, { ...opts, json }),
  put: <T = Record<string, unknown>>(path: string, json: unknown, opts?: RequestOptions) =>
    call<T>('PUT', path, { ...opts, json }),
  delete: <T = Record<string, unknown>>(path: string, opts?: RequestOptions) => call<T>('DELETE', path, opts),
};
