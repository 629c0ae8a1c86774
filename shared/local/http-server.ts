import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { type RouteDef, routeEntry, routes } from '../../infra/definitions.ts';
import { asFunction } from './call-record.ts';
import { logger } from '../log.ts';
import { answerFramingError } from './framing-errors.ts';
import { LOOPBACK } from './paths.ts';
import { lambdaContext, loadHandler } from './lambda.ts';
import { recordInvocation, type Stats, statsEnabled } from './stats.ts';

/** Reads at most `limit` bytes; the rest is drained (a body cut at the limit still tells the handler it was too large). */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    if (size < limit) chunks.push(buf.subarray(0, limit - size));
    size += buf.length;
  }
  return Buffer.concat(chunks);
}

export function toApiGatewayEvent(
  req: IncomingMessage,
  route: RouteDef | undefined,
  path: string,
  body: Buffer,
): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  }
  // As API Gateway (payload 2.0) does: the cookies travel in `cookies`, not in the headers.
  const cookies = headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .filter(Boolean);
  delete headers.cookie;
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
  const method = (req.method ?? 'GET').toUpperCase();
  // The request's method: a HEAD served by a GET route is `HEAD /path`, as on API Gateway.
  const routeKey = route ? `${method} ${route.path}` : '$default';
  const now = Date.now();
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: url.search.slice(1),
    ...(cookies?.length ? { cookies } : {}),
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method,
        path,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
    },
    body: body.length ? body.toString('utf8') : undefined,
    isBase64Encoded: false,
  };
}

const NOT_FOUND = 'functions/http/not-found.ts';

/** Characters of a path without a route the request line keeps. */
const MAX_PATH = 64;

/**
 * One line per request (the terminal's `POST /alarm/report 200 4 ms code 0`): the route's path, never
 * the query string (it may carry a signature or a token), and the envelope's code when there is one.
 */
function requestLine(method: string, path: string, result: APIGatewayProxyStructuredResultV2, ms: number) {
  const code = /^\{\s*"code"\s*:\s*(-?\d+)/.exec(result.body?.slice(0, 32) ?? '')?.[1];
  const shown = path.length > MAX_PATH ? `${path.slice(0, MAX_PATH - 1)}…` : path;
  logger.info('request', {
    method,
    path: shown.replace(/[^\x21-\x7e]/g, '?'),
    status: result.statusCode ?? 200,
    ms: Math.round(ms),
    ...(code !== undefined ? { code: Number(code) } : {}),
  });
}

/** How long the local API keeps an idle kept-alive connection open (ms). */
const SENDER_IDLE_MS = 120_000;

export interface LocalHttpServer {
  server: Server;
  port: number;
  /**
   * Stops accepting: closes the listener and the idle keep-alive connections, answers anything that
   * still arrives on an open connection with 503 (never code 0), and waits for the requests in flight
   * to finish, up to `graceMs`; then cuts what is left. Resolves with the requests it had to cut.
   */
  stopAccepting(graceMs: number): Promise<{ cut: number; at: number }>;
}

const STOPPING = JSON.stringify({ code: 503, msg: 'service is stopping, retry later', data: {} });

/** The local API Gateway: routes requests from the route table to the real handlers. */
export interface HttpServerOptions {
  /** `GET /_local/stats` (TOCSIN_STATS=1): the stack's counts, `?reset=1` starts afresh. */
  stats?: (reset: boolean) => Promise<Stats>;
}

export async function startHttpServer(
  port: number,
  basePath: string,
  opts: HttpServerOptions = {},
): Promise<LocalHttpServer> {
  const table = routes;
  const prefix = basePath.replace(/\/+$/, '');
  let stopping = false;
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (stopping) {
      // A request on a connection that was open before the stop: refuse it, and close the connection.
      res.writeHead(503, {
        'content-type': 'application/json; charset=utf-8',
        connection: 'close',
        'retry-after': '1',
      });
      res.end(STOPPING);
      return;
    }
    inFlight++;
    try {
      const url = new URL(req.url ?? '/', 'http://local');
      let path = url.pathname;
      if (prefix && path.startsWith(prefix)) path = path.slice(prefix.length) || '/';
      const method = (req.method ?? 'GET').toUpperCase();
      if (path === '/_local/stats' && opts.stats && statsEnabled()) {
        const counts = await opts.stats(url.searchParams.get('reset') === '1');
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(counts));
        return;
      }
      const route = table.find(
        (r) => r.path === path && (r.method === method || (method === 'HEAD' && r.head === true)),
      );
      // Read a little past the limit so the handler can tell an oversized body and answer 413.
      const body = await readBody(req, 256 * 1024 + 1);
      const event = toApiGatewayEvent(req, route, path, body);
      // The Lambda that serves the route on AWS: a function group's entry dispatches on the routeKey.
      const handler = await loadHandler(route ? routeEntry(route) : NOT_FOUND);
      const started = performance.now();
      const result = (await asFunction(route ? event.routeKey : '$default', () =>
        handler(event, lambdaContext(route?.handler ?? 'not-found')),
      )) as APIGatewayProxyStructuredResultV2;
      const ms = performance.now() - started;
      recordInvocation(route ? `${route.method} ${route.path}` : 'not-found', ms);
      // The local runtime's own routes (the test clock `npm run call` reads) are its plumbing, not news.
      if (!path.startsWith('/_local/')) requestLine(method, route ? route.path : path, result, ms);
      const headers: Record<string, string | string[]> = { ...(result.headers as Record<string, string>) };
      // Finishing in-flight work during a stop: the client must not reuse this connection.
      if (stopping) headers.connection = 'close';
      // API Gateway turns `cookies` into Set-Cookie headers (beside one a handler set itself).
      if (result.cookies?.length) {
        headers['set-cookie'] = [
          ...(headers['set-cookie'] ? [String(headers['set-cookie'])] : []),
          ...result.cookies,
        ];
      }
      res.writeHead(result.statusCode ?? 200, headers);
      res.end(result.body ?? '');
    } catch (err) {
      // The request broke off while its body was read (the client went, or the parser refused the
      // rest: answered by answerFramingError): nobody is left to answer.
      if (!req.complete && req.socket.destroyed) return;
      logger.error('local http adapter failed', { error: err as Error });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ code: 500, msg: 'internal error', data: {} }));
    } finally {
      inFlight--;
      if (inFlight === 0) idle?.();
    }
  });
  // An idle kept-alive connection stays open longer than alarm senders' pools keep theirs (Go's
  // net/http 90 s, Node's agent 5 s): a server that closes first races the sender's next report on
  // that connection, and the sender gets ECONNRESET for a POST it will not retry.
  server.keepAliveTimeout = SENDER_IDLE_MS;
  // A request Node cannot parse (a header too large, a malformed request line) never reaches the
  // handler: it is answered here, with the envelope.
  server.on('clientError', answerFramingError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, LOOPBACK, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    async stopAccepting(graceMs) {
      stopping = true;
      const at = Date.now();
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      const drained = new Promise<void>((r) => {
        idle = r;
        if (inFlight === 0) r();
      });
      let timer: NodeJS.Timeout | undefined;
      const late = await Promise.race([
        drained.then(() => false),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(true), graceMs);
        }),
      ]);
      clearTimeout(timer);
      const cut = late ? inFlight : 0;
      // Whatever is still open is idle now (or past the grace period): close it.
      server.closeAllConnections();
      await closed;
      return { cut, at };
    },
  };
}
