import { currentFunction } from './call-record.ts';

/**
 * State a Lambda container keeps between invocations (caches). On AWS each function has containers of
 * its own; the local API thread serves every route, so its routes would share such state and a route
 * could live off what another one read. While calls are recorded each function gets state of its own
 * (so it makes, and is seen to make, its own calls); otherwise there is one, as before.
 */
export function perContainer<T>(make: () => T): () => T {
  let one: { state: T } | undefined;
  let byFunction: Map<string, T> | undefined;
  return () => {
    const fn = currentFunction();
    if (fn === undefined) {
      one ??= { state: make() };
      return one.state;
    }
    byFunction ??= new Map();
    let state = byFunction.get(fn);
    if (state === undefined) {
      state = make();
      byFunction.set(fn, state);
    }
    return state;
  };
}
