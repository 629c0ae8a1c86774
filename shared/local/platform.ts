import type { HttpAuthScheme, HttpRequest } from '@smithy/types';
import {
  type AwsService,
  type ClientSettings,
  type Platform,
  type SdkClient,
  usePlatform,
} from '../platform.ts';
import { currentFunction, recordCalls } from './call-record.ts';
import { countCalls } from './stats.ts';

/**
 * The local adapter of the platform port (shared/platform.ts), installed in every thread of the local
 * runtime before it loads a handler (useLocalPlatform):
 *
 * - clients of the emulators (DynamoDB Local, the SQS emulator) send a fixed Authorization header
 *   instead of a SigV4 signature (neither emulator checks one);
 * - every client's calls are recorded while TOCSIN_CALL_LOG is set (the least-privilege proof,
 *   call-record.ts) and counted while TOCSIN_STATS=1 (the benchmarks, stats.ts);
 * - state a container keeps is kept per function while calls are recorded: the local API thread
 *   serves every route, and on AWS each function has containers of its own, so each makes (and is
 *   seen to make) its own calls. Otherwise there is one state, as on AWS.
 */
export const localPlatform: Platform = {
  clientSettings: (_service, endpoint) => (endpoint ? localEmulatorOptions(endpoint) : {}),
  readyClient<T extends SdkClient>(client: T, service: AwsService): T {
    countCalls(client, service);
    return recordCalls(client);
  },
  containerState<T>(slot: object, make: () => T): T {
    const fn = currentFunction();
    let states = byFunction.get(fn);
    if (!states) {
      states = new WeakMap();
      byFunction.set(fn, states);
    }
    if (!states.has(slot)) states.set(slot, make());
    return states.get(slot) as T;
  },
};

/** Container state by function (`undefined`: outside any, or while calls are not recorded). */
const byFunction = new Map<string | undefined, WeakMap<object, unknown>>();

/** Makes this thread run on the local adapter (before any handler is loaded). */
export function useLocalPlatform(): void {
  usePlatform(localPlatform);
}

/** The Authorization header every request to a local emulator carries (in SigV4's shape, never checked). */
const LOCAL_AUTHORIZATION =
  'AWS4-HMAC-SHA256 Credential=local/20000101/local/local/aws4_request, SignedHeaders=host, Signature=0';

/**
 * Client settings for a local emulator at `endpoint` (DynamoDB Local, the SQS emulator): placeholder
 * credentials and a fixed Authorization header instead of a SigV4 signature. Neither emulator checks
 * signatures, and signing (hashing the payload, deriving the key, HMACs) was about a sixth of each
 * call's CPU in the local stack (bench:ingest).
 */
export function localEmulatorOptions(endpoint: string): ClientSettings & { endpoint: string } {
  const sign: HttpAuthScheme = {
    schemeId: 'aws.auth#sigv4',
    identityProvider: (ipc) => ipc.getIdentityProvider('aws.auth#sigv4'),
    signer: {
      sign: async (request) => {
        (request as HttpRequest).headers.authorization = LOCAL_AUTHORIZATION;
        return request;
      },
    },
  };
  return {
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    httpAuthSchemes: [sign],
  };
}
