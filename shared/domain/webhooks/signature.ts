import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks signature of an outbound call (API guide §12.2):
 * `webhook-signature: v1,<base64 hmac_sha256(key = task secret, id + "." + timestamp + "." + body)>`.
 * The key is the task secret's UTF-8 bytes (not a `whsec_` base64 key). A receiver verifies with the
 * same function and should also check that `webhook-timestamp` is recent and de-duplicate on
 * `webhook-id`.
 */
export function signWebhook(secret: string, id: string, timestamp: number | string, body: string): string {
  const mac = createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/**
 * The secret a receiver gives the Standard Webhooks libraries (`new Webhook(secret)`): `whsec_` and
 * the base64 of the task secret's UTF-8 bytes (the libraries decode it back to the HMAC key).
 */
export function standardWebhookSecret(taskSecret: string): string {
  return `whsec_${Buffer.from(taskSecret, 'utf8').toString('base64')}`;
}

/** Checks a `webhook-signature` header (space-separated list of `v1,<sig>` entries) in constant time. */
export function verifyWebhookSignature(
  secret: string,
  id: string,
  timestamp: number | string,
  body: string,
  header: string,
): boolean {
  const expected = Buffer.from(signWebhook(secret, id, timestamp, body), 'utf8');
  return header.split(' ').some((candidate) => {
    const got = Buffer.from(candidate.trim(), 'utf8');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
