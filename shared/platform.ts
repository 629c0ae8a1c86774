import type { HttpAuthScheme } from '@smithy/types';
import { traced } from './tracing.ts';

/**
 * The platform port: how the runtime gets its AWS SDK clients and the state a container keeps between
 * invocations. Two adapters implement it:
 *
 * - the AWS adapter (below, the default): clients traced with X-Ray where tracing is on, and one state
 *   per module, which a Lambda container keeps between invocations;
 * - the local adapter (shared/local/platform.ts), which the local runtime installs in each of its
 *   threads before it loads a handler: clients of the emulators, calls recorded for the
 *   least-privilege proof and counted for the benchmarks, and state of its own for each function the
 *   thread serves, as each has containers of its own on AWS.
 *
 * The runtime never imports an adapter other than the AWS one: the installed adapter is found on the
 * global object, where every copy of this module finds it (in bundle mode each function's bundle
 * carries its own copy of the runtime).
 */
export interface Platform {
  /** Settings of a new client of `service` that reaches `endpoint` (a configured one; none on AWS). */
  clientSettings(service: AwsService, endpoint: string | undefined): ClientSettings;
  /** Readies a client the runtime made with those settings. */
  readyClient<T extends SdkClient>(client: T, service: AwsService): T;
  /** The state a container keeps under `slot` (perContainer's), made on first use. */
  containerState<T>(slot: object, make: () => T): T;
}

/** The services the runtime calls, by their IAM prefix. */
export type AwsService = 'dynamodb' | 'sqs' | 'secretsmanager' | 'ses' | 'sns' | 'sms-voice';

/** What a platform adds to a client's configuration. */
export interface ClientSettings {
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  httpAuthSchemes?: HttpAuthScheme[];
}

/** An AWS SDK v3 client, as far as a platform touches it: its middleware stack. */
export interface SdkClient {
  middlewareStack: {
    // biome-ignore lint/suspicious/noExplicitAny: the SDK's middleware types differ per client
    add(middleware: any, options: any): void;
    remove(name: string): boolean;
  };
}

const moduleState = new WeakMap<object, unknown>();

/** On AWS: clients as the SDK makes them, traced; the state of a container is the module's. */
const awsPlatform: Platform = {
  clientSettings: (_service, endpoint) => (endpoint ? { endpoint } : {}),
  readyClient: (client) => traced(client),
  containerState<T>(slot: object, make: () => T): T {
    if (!moduleState.has(slot)) moduleState.set(slot, make());
    return moduleState.get(slot) as T;
  },
};

/** On the global object: every copy of this module (one per bundle) finds the one installed. */
const INSTALLED = Symbol.for('tocsin.platform');
const registry = globalThis as { [INSTALLED]?: Platform };

/** The adapter this thread runs on: the one installed, else AWS. */
export function platform(): Platform {
  return registry[INSTALLED] ?? awsPlatform;
}

/** Installs the adapter this thread runs on (the local runtime's; undefined: AWS again). */
export function usePlatform(adapter: Platform | undefined): void {
  registry[INSTALLED] = adapter;
}

/**
 * The SDK's logger middleware prepares a filtered copy of every request and response for a logger
 * the service never gives it: about a fifth of a client's CPU per call. Our own logs say what matters.
 */
export function withoutSdkLogging<T extends SdkClient>(client: T): T {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

/**
 * A client of `service` for the runtime: `make` builds it from the platform's settings (spread them
 * last, over the service's own options), and the platform readies it. `endpoint`: a configured
 * endpoint other than the region's (the local runtime's emulators), if any.
 */
export function sdkClient<T extends SdkClient>(
  service: AwsService,
  make: (settings: ClientSettings) => T,
  endpoint?: string,
): T {
  const p = platform();
  return p.readyClient(withoutSdkLogging(make(p.clientSettings(service, endpoint))), service);
}
