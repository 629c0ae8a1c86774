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
