import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bodyDigest, canonicalQuery, isNonce, signedText, signRequest } from './request-signature.ts';

const guide = readFileSync(join(import.meta.dirname, '../../../docs/api-guide.md'), 'utf8');

/** The test vectors of API guide §3.1.1, as the table there gives them. */
function vectors() {
  const section = guide.slice(guide.indexOf('### 3.1.1'), guide.indexOf('### 3.2'));
  const fixed = /app `(\d+)`, token\s+`([0-9a-f]{40})`, timestamp `(\d+)`, nonce `([A-Za-z0-9_-]+)`/.exec(
    section,
  );
  if (!fixed) throw new Error('API guide §3.1.1: the vectors’ app, token, timestamp and nonce are missing');
  const cell = (c: string) => (c.trim() === '(none)' ? '' : c.trim().replace(/^`|`$/g, ''));
  const rows = section
    .split('\n')
    .filter((l) => /^\| (GET|PUT|POST|DELETE) /.test(l))
    .map((l) => l.split('|').slice(1, -1).map(cell));
  return {
    appId: fixed[1],
    token: fixed[2],
    timestamp: fixed[3],
    nonce: fixed[4],
    rows,
    signedTextBlock: /```\n(TOCSIN-APP-SIGN-V2\n[\s\S]*?)\n```/.exec(section)?.[1],
  };
}

describe('the request-bound app signature (API guide §3.1.1)', () => {
  it('matches the test vectors of the API guide', () => {
    const v = vectors();
    expect(v.rows.length).toBeGreaterThanOrEqual(2);
    for (const [method, path, rawQuery, body, sign] of v.rows) {
      const request = { method, path, rawQuery, body: Buffer.from(body, 'utf8') };
      expect(signRequest(v.token, request, v.appId, v.timestamp, v.nonce), `${method} ${path}`).toBe(sign);
    }
    const [method, path, rawQuery] = v.rows[0];
    expect(signedText({ method, path, rawQuery, body: Buffer.alloc(0) }, v.appId, v.timestamp, v.nonce)).toBe(
      v.signedTextBlock,
    );
  });

  it('canonicalises the query: decoded, RFC 3986 encoded, sorted by name then value', () => {
    expect(canonicalQuery('')).toBe('');
    expect(canonicalQuery('b=2&a=1&a=0')).toBe('a=0&a=1&b=2');
    expect(canonicalQuery('q=disk+space&x=%7e&y=a%2Fb&z')).toBe('q=disk%20space&x=~&y=a%2Fb&z=');
    expect(canonicalQuery("n=it's(1)*!")).toBe('n=it%27s%281%29%2A%21');
    expect(canonicalQuery('k=%E4%BD%A0')).toBe('k=%E4%BD%A0');
    expect(canonicalQuery('a=%zz')).toBeUndefined();
    expect(canonicalQuery('&&a=1&')).toBe('a=1');
  });

  it('digests the body’s bytes, and binds every part of the request', () => {
    expect(bodyDigest('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    const base = { method: 'PUT', path: '/alarmtask/status', rawQuery: '', body: Buffer.from('{"a":1}') };
    const sign = (over: Partial<typeof base>, nonce = 'n'.repeat(16), ts = '1700000000') =>
      signRequest('token', { ...base, ...over }, 7, ts, nonce);
    const all = [
      sign({}),
      sign({ method: 'POST' }),
      sign({ path: '/department/simple' }),
      sign({ rawQuery: 'uid=1' }),
      sign({ body: Buffer.from('{"a":2}') }),
      sign({}, 'm'.repeat(16)),
      sign({}, 'n'.repeat(16), '1700000001'),
    ];
    expect(new Set(all).size).toBe(all.length);
    expect(sign({ method: 'put' })).toBe(all[0]);
  });

  it('takes nonces of 16 to 64 URL-safe characters only', () => {
    expect(isNonce('a'.repeat(16))).toBe(true);
    expect(isNonce('A-_9'.repeat(16))).toBe(true);
    for (const bad of [
      undefined,
      '',
      'a'.repeat(15),
      'a'.repeat(65),
      `${'a'.repeat(15)}=`,
      `${'a'.repeat(16)} `,
    ])
      expect(isNonce(bad), String(bad)).toBe(false);
  });
});
