import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The two signature schemes of API guide §3: HMAC-SHA256 (64 hex) and legacy MD5 (32 hex), both over
 * `id + "&" + timestamp` with the key (app token, task secret or task token).
 */
export function hmacSign(key: string, id: number | string, timestamp: number | string): string {
  return createHmac('sha256', key).update(`${id}&${timestamp}`).digest('hex');
}

export function md5Sign(key: string, id: number | string, timestamp: number | string): string {
  return createHash('md5').update(`${id}&${timestamp}${key}`).digest('hex');
}

function safeEqualHex(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/** Constant-time check of a presented signature against both schemes. */
export function verifySignature(
  key: string,
  id: number | string,
  timestamp: number | string,
  sign: string,
  legacyAllowed: boolean,
): boolean {
  if (typeof sign !== 'string') return false;
  if (sign.length === 64) return safeEqualHex(hmacSign(key, id, timestamp), sign);
  if (sign.length === 32 && legacyAllowed) return safeEqualHex(md5Sign(key, id, timestamp), sign);
  return false;
}

export function withinSkew(timestamp: number, now: number, skew: number): boolean {
  return Number.isFinite(timestamp) && Math.abs(now - timestamp) <= skew;
}

/** 40 lower-case hex characters from a CSPRNG (tokens, secrets). */
export function newToken(): string {
  return randomBytes(20).toString('hex');
}
