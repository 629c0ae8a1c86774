import type { HttpAuthScheme, HttpRequest } from '@smithy/types';
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
