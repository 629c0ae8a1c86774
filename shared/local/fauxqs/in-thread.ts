import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from '@smithy/types';
import type { FauxqsServer } from 'fauxqs';
import { serveInThread } from '../../aws.ts';
import { logger } from '../../log.ts';
import { recordInThread } from '../stats.ts';

/**
 * The API's SQS client reaches the emulator in its own thread: the request the SDK built goes to the
 * router fauxqs's HTTP route would hand it to, and the answer goes back to the SDK as an HTTP answer.
 * Only the loopback socket is skipped, which cost more than the SDK's and the emulator's own work
 * together (client and server HTTP, two socket writes). patches/fauxqs+2.4.1+005+sqs-router.patch
 * makes the server expose that router (`sqsRouter`).
 */

/** What fauxqs's HTTP route hands each AWS JSON request to (the part of its SqsRouter used here). */
interface SqsRouter {
  handle(
    request: { headers: Record<string, string>; body: unknown },
    reply: { status(code: number): unknown; header(name: string, value: string): unknown },
  ): Promise<unknown>;
}

const utf8 = new TextDecoder();

/**
 * One SQS request (AWS JSON protocol, as the SDK built it) answered by the router in this thread, as
 * its HTTP route answers it: the JSON body parsed, the router's status, headers and result; anything
 * else it throws is a 500, as fastify would answer.
 */
async function serveSqs(router: SqsRouter, request: HttpRequest): Promise<HttpResponse> {
  const headers: Record<string, string> = {
    host: `${request.hostname}${request.port ? `:${request.port}` : ''}`,
  };
  for (const [k, v] of Object.entries(request.headers)) headers[k.toLowerCase()] = v;
  const out: Record<string, string> = {};
  let statusCode = 200;
  const reply = {
    status(code: number) {
      statusCode = code;
      return reply;
    },
    header(name: string, value: string) {
      out[name.toLowerCase()] = String(value);
      return reply;
    },
  };
  let result: unknown;
  try {
    const body = request.body as string | Uint8Array | undefined;
    const text = typeof body === 'string' ? body : body ? utf8.decode(body) : '{}';
    result = await router.handle({ headers, body: JSON.parse(text) }, reply);
  } catch (err) {
    // What fastify answers for an error the router does not turn into an SQS error.
    statusCode = 500;
    out['content-type'] = 'application/json; charset=utf-8';
    result = { statusCode: 500, error: 'Internal Server Error', message: (err as Error).message };
  }
  // fauxqs's answers carry a request id (its onSend hook), which the SDK reads into $metadata.
  out['x-amz-request-id'] ??= randomUUID().replaceAll('-', '').toUpperCase().slice(0, 16);
  out['x-amz-id-2'] ??= 'fauxqs';
  return { statusCode, headers: out, body: Buffer.from(JSON.stringify(result ?? {})) };
}

/**
 * Serves the emulator's endpoint in this thread (withdrawn by `serveInThread(endpoint)` at a stop).
 * Without the router (fauxqs not patched) the API reaches the queues over HTTP, as any other client
 * does, and a warning says so. Returns whether it serves in-thread.
 */
export function serveSqsInThread(server: FauxqsServer): boolean {
  const router = (server as Partial<FauxqsServer>).sqsRouter as SqsRouter | undefined;
  if (typeof router?.handle !== 'function') {
    logger.warn('fauxqs has no sqsRouter (not patched): the API reaches the queues over HTTP');
    return false;
  }
  serveInThread(server.address, (request) => {
    recordInThread();
    return serveSqs(router, request);
  });
  return true;
}
