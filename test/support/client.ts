import { inject } from 'vitest';
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

export interface AppAuth {
  id: number;
  token: string;
  /** Override the timestamp (e.g. a stale one). */
  timestamp?: number;
  scheme?: 'hmac' | 'md5';
  /** Override the signature. */
  sign?: string;
}

export async function appHeaders(auth: AppAuth = TEST_APP): Promise<Record<string, string>> {
  const ts = auth.timestamp ?? (await serviceNow());
  const sign = auth.sign ?? (auth.scheme === 'md5' ? md5Sign : hmacSign)(auth.token, auth.id, ts);
  return { 'x-app-id': String(auth.id), 'x-app-timestamp': String(ts), 'x-app-sign': sign };
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
  const headers: Record<string, string> = {
    ...(opts.app === null ? {} : await appHeaders(opts.app ?? TEST_APP)),
  };
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
