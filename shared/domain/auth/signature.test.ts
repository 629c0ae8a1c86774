import { describe, expect, it } from 'vitest';
import { hmacSign, md5Sign, newToken, verifySignature, withinSkew } from './signature.ts';

describe('signatures (API guide §3)', () => {
  it('matches the documented MD5 test vector', () => {
    expect(md5Sign('d3213fe78d9f81f448141495a274e0c700ad1c25', 100001, 1582650647)).toBe(
      'f7a231040a1b05ad74f3264356016dae',
    );
  });

  it('signs HMAC-SHA256 over id&timestamp with the key', () => {
    // echo -n '100001&1582650647' | openssl dgst -sha256 -hmac key
    expect(hmacSign('key', 100001, 1582650647)).toMatch(/^[0-9a-f]{64}$/);
    expect(hmacSign('key', 100001, 1582650647)).not.toBe(hmacSign('key2', 100001, 1582650647));
  });

  it.each([
    ['hmac', (k: string) => hmacSign(k, 7, '1700000000'), true, true],
    ['md5', (k: string) => md5Sign(k, 7, '1700000000'), true, true],
    ['md5 when legacy is disabled', (k: string) => md5Sign(k, 7, '1700000000'), false, false],
    ['wrong key', () => hmacSign('other', 7, '1700000000'), true, false],
    ['truncated', (k: string) => hmacSign(k, 7, '1700000000').slice(0, 40), true, false],
    ['empty', () => '', true, false],
  ])('verifies %s', (_name, sign, legacy, expected) => {
    expect(verifySignature('secret', 7, '1700000000', sign('secret'), legacy)).toBe(expected);
  });

  it('accepts timestamps within the skew only', () => {
    expect(withinSkew(1000, 1300, 300)).toBe(true);
    expect(withinSkew(1000, 1301, 300)).toBe(false);
    expect(withinSkew(1301, 1000, 300)).toBe(false);
    expect(withinSkew(Number.NaN, 1000, 300)).toBe(false);
  });

  it('makes 40-hex tokens that differ', () => {
    const a = newToken();
    expect(a).toMatch(/^[0-9a-f]{40}$/);
    expect(newToken()).not.toBe(a);
  });
});
