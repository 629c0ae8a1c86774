/** Under the chaos queue (`npm run test:chaos`) a message may be delivered twice, even at once. */
export const UNDER_CHAOS = process.env.SQS_CHAOS === '1';

/**
 * What one message did, each thing once under the chaos queue: a copy of the message may run beside
 * it and do it again (a webhook event sent twice with its webhook-id, a notification's first run sent
 * twice: delivery is at least once). Without chaos the list as it is, so that a test still sees a
 * second delivery the plain queue never makes.
 */
export function eachOnce<T>(list: T[], key: (x: T) => unknown): T[] {
  if (!UNDER_CHAOS) return list;
  const seen = new Set<string>();
  return list.filter((x) => {
    const k = JSON.stringify(key(x));
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
