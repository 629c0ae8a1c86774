import { outboundRequest } from '../../../outbound/client.ts';
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

/**
 * The call was not made: the URL guard refused the target (a URL a task named points to a private or
 * reserved address), or the URL is not an http(s) URL. The message names the address, not the URL.
 */
export class ProviderBlocked extends Error {
  constructor(
    readonly code: 'blocked' | 'invalid_url',
    message: string,
  ) {
    super(message);
  }
}

/** How much of a provider's answer is read: their JSON replies are a few hundred bytes. */
const MAX_REPLY_BYTES = 256 * 1024;

/**
 * One HTTP call through the outbound client (keep-alive, hard timeout, no redirects: a 3xx is an
 * answer like any other non-200); the body is parsed as JSON when it is JSON. `guard`: the URL was
 * named by a task or report (a robot given as a whole URL), so private and reserved targets are
 * refused (API guide §12.7); the deployment's own provider base URLs are trusted and not guarded.
 */
export async function httpCall(
  url: string | URL,
  init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
  timeoutMs: number,
  opts: { guard?: boolean } = {},
): Promise<HttpReply> {
  const res = await outboundRequest(url, {
    ...init,
    timeoutMs,
    guard: opts.guard ?? false,
    readBodyBytes: MAX_REPLY_BYTES,
  });
  if (!res.ok) {
    if (res.failure === 'blocked' || res.failure === 'invalid')
      throw new ProviderBlocked(res.failure === 'blocked' ? 'blocked' : 'invalid_url', res.error);
    throw new ProviderUnreachable(res.failure === 'timeout' ? 'timeout' : 'network');
  }
  let json: unknown;
  try {
    json = res.body ? JSON.parse(res.body) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text: res.body, json };
}

export const postJson = (
  url: string | URL,
  body: unknown,
  timeoutMs: number,
  opts: { guard?: boolean } = {},
) =>
  httpCall(
    url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify(body),
    },
    timeoutMs,
    opts,
  );

/** An HTTP status other than 200: 5xx, 408 and 429 are worth a retry, anything else is refused. */
export function httpStatusOutcome(status: number): SendOutcome {
  const code = `http_${status}`;
  return status >= 500 || status === 408 || status === 429 ? failed(code) : rejected(code);
}

/** Runs a provider call, turning "no answer" into a retryable outcome and a refused target into a refusal. */
export async function guard(call: () => Promise<SendOutcome>): Promise<SendOutcome> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ProviderUnreachable) return failed(err.code, err.message);
    if (err instanceof ProviderBlocked) return rejected(err.code, err.message);
    throw err;
  }
}
