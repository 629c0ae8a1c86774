import {
  Agent as HttpAgent,
  type AgentOptions,
  type IncomingMessage,
  request as httpRequest,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import {
  addressKind,
  BlockedAddressError,
  blockedReason,
  guardedLookup,
  ipLiteralHost,
} from './url-guard.ts';
import { tracedHttp, tracingEnabled } from '../tracing.ts';

/**
 * The one outbound HTTP client (engineering guide 8): webhook deliveries and every notification
 * provider call go through it.
 * - Keep-alive: connections are pooled per origin and reused; a response body is read (or drained
 *   and discarded, bounded) rather than the socket destroyed, so the connection can serve the next
 *   call. A request on a reused connection that the peer had already closed is sent once more.
 * - A hard timeout over the whole exchange: connecting, sending, the response head and (when it is
 *   read) the body.
 * - Redirects are never followed: a 3xx is returned as the answer it is.
 * - The URL guard (API guide §12.7) when `guard` is set: an IP-literal host is checked before connecting,
 *   a name in the connection's own DNS lookup (so DNS rebinding cannot reach a private address).
 *   Guarded and unguarded calls use separate connection pools, so a guarded call never rides on a
 *   connection opened without the check.
 * - Traced (on Lambda): a subsegment per call with the host, method and status, never the path or
 *   query (shared/tracing.ts).
 * It never throws: every outcome is a value.
 */
export interface OutboundRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Hard limit on the whole exchange, ms. */
  timeoutMs: number;
  /** Refuse private and reserved targets (URLs a task or report names, when the deployment blocks them). */
  guard: boolean;
  /**
   * Read the response body as text, up to this many bytes (a longer body is cut, `truncated`, and its
   * connection closed). Absent: the answer comes with the status line, and the body is drained and
   * discarded in the background (up to 64 KiB and the timeout, else the connection is closed).
   */
  readBodyBytes?: number;
}

export interface OutboundAnswer {
  ok: true;
  status: number;
  /** The response text ('' unless `readBodyBytes` was given). */
  body: string;
  truncated: boolean;
}

export interface OutboundFailure {
  ok: false;
  /** timeout: no (complete) answer in time; network: connection or protocol error; blocked: the guard refused the target; invalid: not an http(s) URL. */
  failure: 'timeout' | 'network' | 'blocked' | 'invalid';
  /** Short and free of the URL (whose path or query may hold a token): an error code or a reason. */
  error: string;
}

export type OutboundResult = OutboundAnswer | OutboundFailure;

// Every connection a burst opened stays pooled for the next burst (a batch of 25 alarms posts 25
// events to one webhook at once): keeping 16 closed and reopened about a thousand connections in 40 s
// at 300-600 alarms/s (bench:ingest). Idle ones go when the receiver's keep-alive ends.
const AGENT_OPTIONS: AgentOptions = {
  keepAlive: true,
  keepAliveMsecs: 1000,
  maxSockets: 64,
  maxFreeSockets: 64,
  scheduling: 'lifo',
};

const pools = {
  open: { http: new HttpAgent(AGENT_OPTIONS), https: new HttpsAgent(AGENT_OPTIONS) },
  guarded: { http: new HttpAgent(AGENT_OPTIONS), https: new HttpsAgent(AGENT_OPTIONS) },
};

/** A discarded body longer than this closes its connection instead of being read to the end. */
const DRAIN_LIMIT_BYTES = 64 * 1024;

/** Errors of a kept-alive connection the peer closed while it sat in the pool. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

const failure = (kind: OutboundFailure['failure'], error: string): OutboundFailure => ({
  ok: false,
  failure: kind,
  error,
});

function blockedIn(err: unknown): BlockedAddressError | undefined {
  if (err instanceof BlockedAddressError) return err;
  const e = err as { cause?: unknown; errors?: unknown[] } | undefined;
  if (e?.cause instanceof BlockedAddressError) return e.cause;
  return e?.errors?.find((x): x is BlockedAddressError => x instanceof BlockedAddressError);
}

const RETRY = Symbol('retry');

/** Sends one request; see OutboundRequest. Never throws. */
export async function outboundRequest(url: URL | string, req: OutboundRequest): Promise<OutboundResult> {
  let target: URL;
  try {
    target = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return failure('invalid', 'invalid url');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    return failure('invalid', 'unsupported scheme');
  if (req.guard) {
    const literal = ipLiteralHost(target);
    const kind = literal ? addressKind(literal) : undefined;
    if (literal && kind) return failure('blocked', blockedReason(literal, kind));
  }
  if (!tracingEnabled()) return send(target, req);
  return tracedHttp(
    target,
    req.method,
    () => send(target, req),
    (r) => (r.ok ? { status: r.status } : { failure: r.failure }),
  );
}

/** The exchange of outboundRequest, on a checked URL: one retry on a stale pooled connection. */
async function send(target: URL, req: OutboundRequest): Promise<OutboundResult> {
  const controller = new AbortController();
  let ended = false;
  // At the deadline, what this turn of the event loop has received is read first (the abort waits
  // for the check phase, after I/O): an answer that came in time while this container was busy is
  // the receiver's answer, not a timeout (which would send the event again, a duplicate).
  const timer = setTimeout(
    () =>
      setImmediate(() => {
        if (!ended) controller.abort();
      }),
    req.timeoutMs,
  );
  const stopTimer = () => {
    ended = true;
    clearTimeout(timer);
  };
  for (let attempt = 1; ; attempt++) {
    const result = await exchange(target, req, controller.signal, attempt === 1, stopTimer);
    if (result !== RETRY) return result;
  }
}

/** One request on one connection. `stopTimer` is called once the exchange has fully ended. */
function exchange(
  url: URL,
  opts: OutboundRequest,
  signal: AbortSignal,
  mayRetry: boolean,
  stopTimer: () => void,
): Promise<OutboundResult | typeof RETRY> {
  return new Promise((resolve) => {
    let settled = false;
    let responded = false;
    const settle = (r: OutboundResult | typeof RETRY) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    const timeout = () => failure('timeout', `timeout after ${opts.timeoutMs} ms`);
    const https = url.protocol === 'https:';
    const pool = opts.guard ? pools.guarded : pools.open;
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body, 'utf8'));
    const request = (https ? httpsRequest : httpRequest)(
      url,
      {
        method: opts.method,
        headers,
        signal,
        agent: https ? pool.https : pool.http,
        ...(opts.guard ? { lookup: guardedLookup } : {}),
      },
      (res: IncomingMessage) => {
        responded = true;
        const status = res.statusCode ?? 0;
        // The timer also bounds the body; it stops once the response is over (or cut).
        res.once('close', stopTimer);
        res.on('error', () => {
          // Reported through 'aborted'/'close' or the request's error; nothing to add here.
        });
        if (opts.readBodyBytes === undefined) {
          settle({ ok: true, status, body: '', truncated: false });
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > DRAIN_LIMIT_BYTES) res.destroy();
          });
          return;
        }
        const limit = opts.readBodyBytes;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size + chunk.length > limit) {
            chunks.push(chunk.subarray(0, limit - size));
            size = limit;
            settle({ ok: true, status, body: Buffer.concat(chunks).toString('utf8'), truncated: true });
            res.destroy();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        res.once('end', () =>
          settle({ ok: true, status, body: Buffer.concat(chunks).toString('utf8'), truncated: false }),
        );
        res.once('close', () => settle(signal.aborted ? timeout() : failure('network', 'ECONNRESET')));
      },
    );
    request.on('error', (err: NodeJS.ErrnoException) => {
      if (responded) return; // the response's own handlers settle
      if (signal.aborted) return settle(timeout());
      const stale = request.reusedSocket && err.code !== undefined && STALE_SOCKET_CODES.has(err.code);
      if (mayRetry && stale) return settle(RETRY);
      stopTimer();
      const blocked = blockedIn(err);
      if (blocked) return settle(failure('blocked', blocked.message));
      settle(failure('network', err.code ?? err.message.slice(0, 200)));
    });
    request.end(opts.body);
  });
}
