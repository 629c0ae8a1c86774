import { failed, rejected, type SendOutcome } from './types.ts';

// biome-ignore lint/suspicious/noExplicitAny: provider JSON of arbitrary shape, read defensively
export type ProviderJson = any;

export interface HttpReply {
  status: number;
  text: string;
  json: ProviderJson;
}

/** A provider call that did not get an HTTP answer (timeout, refused, reset). */
export class ProviderUnreachable extends Error {
  constructor(readonly code: 'timeout' | 'network') {
    super(code === 'timeout' ? 'provider did not answer in time' : 'provider unreachable');
  }
}

/** One HTTP call with a timeout; the body is parsed as JSON when it is JSON. */
export async function httpCall(
  url: string | URL,
  init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
  timeoutMs: number,
): Promise<HttpReply> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    text = await res.text();
  } catch (err) {
    const name = (err as { name?: string }).name;
    throw new ProviderUnreachable(name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'network');
  }
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

export const postJson = (url: string | URL, body: unknown, timeoutMs: number) =>
  httpCall(
    url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify(body),
    },
    timeoutMs,
  );

/** An HTTP status other than 200: 5xx, 408 and 429 are worth a retry, anything else is refused. */
export function httpStatusOutcome(status: number): SendOutcome {
  const code = `http_${status}`;
  return status >= 500 || status === 408 || status === 429 ? failed(code) : rejected(code);
}

/** Runs a provider call, turning "no answer" into a retryable outcome. */
export async function guard(call: () => Promise<SendOutcome>): Promise<SendOutcome> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ProviderUnreachable) return failed(err.code, err.message);
    throw err;
  }
}
