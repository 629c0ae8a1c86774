import { createHash, randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../config/env.ts';
import type { ClaimView } from '../domain/claims/model.ts';
import { SignInNeeded } from '../domain/claims/service.ts';
import { AppError } from '../domain/errors.ts';
import { CLAIM_PAGE_CSP, claimAnswer, refuseForeignOrigin } from './claim-page.ts';
import type { HttpEvent } from './handler.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = randomBytes(32).toString('base64');
  process.env.PUBLIC_BASE_URL = 'https://alarms.example.com/api';
  resetConfig();
});

/** The claim link's answers: a page with nothing to fetch and every value escaped, or the envelope. */
const event = (headers: Record<string, string> = {}): HttpEvent =>
  ({
    routeKey: 'GET /claim',
    rawPath: '/claim',
    headers,
    requestContext: {
      domainName: 'alarms.example.com',
      apiId: 'abc',
      requestId: 'r1',
      http: { method: 'GET' },
    },
  }) as unknown as HttpEvent;

const view = (over: Partial<ClaimView> = {}): ClaimView => ({
  status: 200,
  code: 0,
  msg: 'workflow [7] is pending: claim it',
  channel: 'email',
  workflow: {
    id: 7,
    status: 0,
    status_name: 'pending',
    task: { id: 1, name: '<script>alert(1)</script>' },
    level: 2,
    level_name: 'error',
    summary: `{"msg":"${'"<img src=x onerror=alert(1)>'.repeat(8)}"}`,
    created_at: 1,
    created_at_text: '2026-01-01 00:00:00 (UTC)',
  },
  offer: { claimant: { uid: 11, username: 'Ann & "Co"' }, page_nonce: 'N'.repeat(22) },
  ...over,
});

describe('the claim page', () => {
  it('is one small document: no script, nothing to fetch, every value escaped, the form posting here', async () => {
    // Act
    const res = await claimAnswer(event({ accept: 'text/html' }), 'TOKEN_1', async () => view());
    const body = String(res.body);
    // Assert
    expect(res.statusCode).toBe(200);
    expect(Buffer.byteLength(body)).toBeLessThan(20 * 1024);
    const tags = new Set([...body.matchAll(/<([a-z!][a-z0-9]*)/gi)].map((m) => m[1].toLowerCase()));
    expect([...tags].sort()).toEqual([
      '!doctype',
      'a',
      'body',
      'button',
      'code',
      'dd',
      'dl',
      'dt',
      'form',
      'h1',
      'head',
      'html',
      'input',
      'link',
      'main',
      'meta',
      'p',
      'style',
      'title',
    ]);
    expect(body).toContain('<link rel="icon" href="data:,">');
    expect(body).not.toMatch(/@import|url\(/i);
    expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(body).toContain('<form method="post" action="/claim">');
    expect(body).toContain('<input type="hidden" name="t" value="TOKEN_1">');
    expect(body).toContain('Claim as Ann &amp; &quot;Co&quot;</button>');
    expect(body).toContain('<meta name="robots" content="noindex, nofollow">');
    expect(res.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-robots-tag': 'noindex, nofollow',
      'content-security-policy': CLAIM_PAGE_CSP,
    });
  });

  it('allows its own style by hash and nothing else: no script source, forms to this origin, no framing', () => {
    // Arrange
    const style = /<style>([\s\S]*?)<\/style>/;
    return claimAnswer(event(), 'T', async () => view()).then((res) => {
      const css = style.exec(String(res.body))?.[1] ?? '';
      const hash = createHash('sha256').update(css).digest('base64');
      // Assert
      expect(CLAIM_PAGE_CSP.split('; ')).toEqual([
        "default-src 'none'",
        `style-src 'sha256-${hash}'`,
        'img-src data:',
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
      ]);
    });
  });

  it('offers the sign-in to a group link without a signed-in person, and sends a claim there', async () => {
    const page = await claimAnswer(event(), 'TOK', async () =>
      view({ offer: { claimant: null, page_nonce: 'n' } }),
    );
    expect(String(page.body)).toContain(
      '<a class="button" href="/console#/claim?t=TOK">Sign in to claim</a>',
    );
    expect(String(page.body)).not.toContain('<form');
    const claim = await claimAnswer(event(), 'TOK', async () => {
      throw new SignInNeeded();
    });
    expect([claim.statusCode, claim.headers?.location]).toEqual([303, '/console#/claim?t=TOK']);
  });

  it('answers refusals with the page and the reason, 429 with its Retry-After', async () => {
    const res = await claimAnswer(event(), 'T', async () => {
      throw new AppError(
        429,
        429,
        'too many claim requests from this address: try again in 9 seconds',
        {},
        { 'retry-after': '9' },
      );
    });
    expect(res.statusCode).toBe(429);
    expect(res.headers).toMatchObject({ 'retry-after': '9', 'content-security-policy': CLAIM_PAGE_CSP });
    expect(String(res.body)).toContain('too many claim requests from this address');
  });

  it('gives a JSON caller the envelope: the view as data, 409 keeping its code and data', async () => {
    const json = event({ accept: 'application/json' });
    const ok = await claimAnswer(json, 'T', async () => view());
    expect(JSON.parse(String(ok.body))).toMatchObject({
      code: 0,
      msg: 'success',
      data: { workflow: { id: 7 } },
    });
    const taken = await claimAnswer(json, 'T', async () =>
      view({ status: 409, code: 409, msg: 'workflow [7] was claimed by Bo at …', offer: undefined }),
    );
    expect(taken.statusCode).toBe(409);
    expect(JSON.parse(String(taken.body))).toMatchObject({
      code: 409,
      msg: 'workflow [7] was claimed by Bo at …',
      data: { workflow: { id: 7 } },
    });
    const refused = await claimAnswer(json, 'T', async () => {
      throw new SignInNeeded();
    });
    expect([refused.statusCode, JSON.parse(String(refused.body)).code]).toEqual([401, 401]);
    expect(refused.headers).toMatchObject({
      'cache-control': 'no-store',
      'x-robots-tag': 'noindex, nofollow',
    });
  });

  it('refuses a claim with the Origin of another site; its own, none or null pass', () => {
    expect(() => refuseForeignOrigin(event({ origin: 'https://evil.example' }))).toThrow(/cross-site/);
    for (const origin of [undefined, 'null', 'https://alarms.example.com']) {
      expect(() => refuseForeignOrigin(event(origin ? { origin } : {}))).not.toThrow();
    }
  });
});
