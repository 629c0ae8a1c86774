import type { SQSClient } from '@aws-sdk/client-sqs';
import type { HttpAuthScheme, HttpRequest, HttpResponse } from '@smithy/types';
/**
 * The SDK's logger middleware prepares a filtered copy of every request and response for a logger
 * the service never gives it: about a fifth of a client's CPU per call. Our own logs say what matters.
 */
export function withoutSdkLogging<T extends { middlewareStack: { remove(name: string): boolean } }>(
  client: T,
): T {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

/** The Authorization header every request to a local emulator carries (in SigV4's shape, never checked). */
const LOCAL_AUTHORIZATION =
  'AWS4-HMAC-SHA256 Credential=local/20000101/local/local/aws4_request, SignedHeaders=host, Signature=0';

/**
 * Client settings for a local emulator at `endpoint` (DynamoDB Local, the SQS emulator): placeholder
 * credentials and a fixed Authorization header instead of a SigV4 signature. Neither emulator checks
 * signatures, and signing (hashing the payload, deriving the key, HMACs) was about a sixth of each
 * call's CPU in the local stack (bench:ingest). Only where an endpoint is configured: never on AWS.
 */
export function localEmulatorOptions(endpoint: string): {
  endpoint: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  httpAuthSchemes: HttpAuthScheme[];
} {
  return {
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    httpAuthSchemes: [
      {
        schemeId: 'aws.auth#sigv4',
        identityProvider: (ipc) => ipc.getIdentityProvider('aws.auth#sigv4'),
        signer: {
          sign: async (request) => {
            (request as HttpRequest).headers.authorization = LOCAL_AUTHORIZATION;
            return request;
          },
        },
      },
    ],
  };
}

/** Serves one request of an emulator running in this thread, as its HTTP endpoint would answer it. */
export type InThreadServer = (request: HttpRequest) => Promise<HttpResponse>;

/** On the global object: the local stack's bundles each carry their own copy of this module. */
const IN_THREAD = Symbol.for('tocsin.inThreadServers');
const registry = globalThis as { [IN_THREAD]?: Map<string, InThreadServer> };
registry[IN_THREAD] ??= new Map();
const inThread = registry[IN_THREAD];

/**
 * Registers (or, without `server`, withdraws) an emulator that runs in this thread at `endpoint`: the
 * local stack's SQS emulator shares the API's thread, and a request to it over loopback HTTP cost
 * twice what the SDK and the emulator's own work cost (client and server HTTP, two socket writes).
 */
export function serveInThread(endpoint: string, server?: InThreadServer): void {
  if (server) inThread.set(endpoint, server);
  else inThread.delete(endpoint);
}

/**
 * Lets a client of a local emulator at `endpoint` hand its requests to the emulator directly while
 * the emulator serves this thread (serveInThread); otherwise, and once it is withdrawn (a stop), they
 * go over HTTP as before. The request is the one the SDK built, serialized and all, and the answer is
 * parsed by the SDK as an HTTP answer would be: only the socket is skipped. Never on AWS (no endpoint).
 */
export function inThreadWhenServed(client: SQSClient, endpoint: string): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const serve = inThread.get(endpoint);
      if (!serve) return next(args);
      return { response: await serve(args.request as HttpRequest) };
    },
    // The innermost middleware: after signing and retries, where the HTTP handler would be called.
    { step: 'deserialize', priority: 'low', name: 'tocsinInThread' },
  );
}
