import { platform } from './platform.ts';

/**
 * State a Lambda container keeps between invocations (caches), made on first use: on AWS one per
 * container (the module's); the local runtime, whose API thread serves every route, may give each
 * function state of its own (shared/local/platform.ts). Which one is the platform's (shared/platform.ts).
 */
export function perContainer<T>(make: () => T): () => T {
  const slot = {};
  return () => platform().containerState(slot, make);
}
