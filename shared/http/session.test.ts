import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { App } from '../domain/auth/apps.ts';
import { csrfMatches, csrfToken, hashSessionId, isSessionId } from '../domain/auth/sessions.ts';
import { AppError } from '../domain/errors.ts';
import { requireGrant } from './handler.ts';
import {
  checkOrigin,
  clearedCookie,
  oidcCookie,
  readCookie,
  serviceLocation,
  sessionCookie,
} from './session.ts';

const event = (over: Partial<APIGatewayProxyEventV2> & { host?: string; local?: boolean } = {}) => {
  const { host = 'abc.execute-api.eu-west-1.amazonaws.com', local = false, ...rest } = over;
  return {
    headers: {},
    routeKey: 'POST /auth/signin',
    rawPath: '/auth/signin',
    requestContext: { apiId: local ? 'local' : 'abc', domainName: host, http: { method: 'POST' } },
    ...rest,
  } as unknown as APIGatewayProxyEventV2;
};

/** The refusal an action throws: [HTTP status, message]. */
function refusal(action: () => void): [number, string] | undefined {
  try {
    action();
  } catch (err) {
    if (err instanceof AppError) return [err.status, err.message];
    throw err;
  }
  return undefined;
}

describe('CSRF tokens', () => {
  it('are derived from the session id, unguessable without it, and compared exactly', () => {
    // Arrange
    const id = 'A'.repeat(43);
    const other = 'B'.repeat(43);
    // Act
    const token = csrfToken(id);
    // Assert
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(csrfToken(id)).toBe(token);
    expect(csrfToken(other)).not.toBe(token);
    expect(csrfMatches(id, token)).toBe(true);
    expect(csrfMatches(other, token)).toBe(false);
    expect(csrfMatches(id, undefined)).toBe(false);
    expect(csrfMatches(id, '')).toBe(false);
    expect(csrfMatches(id, `${token}x`)).toBe(false);
    expect(csrfMatches(id, token.slice(0, -1))).toBe(false);
  });

  it('keeps session ids out of the table: only their SHA-256 is a key', () => {
    const id = 'x'.repeat(43);
    expect(hashSessionId(id)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSessionId(id)).not.toContain(id);
    expect(isSessionId(id)).toBe(true);
    expect(isSessionId(`${id}=`)).toBe(false);
    expect(isSessionId('')).toBe(false);
  });
});

describe('the same-origin check', () => {
  it('takes a request from the service’s own origin, and refuses any other', () => {
    const own = 'https://abc.execute-api.eu-west-1.amazonaws.com';
    expect(refusal(() => checkOrigin(event({ headers: { origin: own } }), true))).toBeUndefined();
    for (const origin of [
      'https://evil.example',
      'http://abc.execute-api.eu-west-1.amazonaws.com',
      'null',
      `${own}.evil.example`,
    ]) {
      expect(
        refusal(() => checkOrigin(event({ headers: { origin } }), true)),
        origin,
      ).toEqual([403, 'cross-site request refused: use the console of this service']);
    }
  });

  it('requires an Origin on a change made with the session, not on a sign-in without one', () => {
    expect(refusal(() => checkOrigin(event(), true))?.[0]).toBe(403);
    expect(refusal(() => checkOrigin(event(), false))).toBeUndefined();
  });

  it('knows the local runtime’s origin and base path', () => {
    process.env.BASE_PATH = '/tocsin';
    try {
      const e = event({ host: '127.0.0.1:3000', local: true, headers: { origin: 'http://127.0.0.1:3000' } });
      expect(serviceLocation(e)).toEqual({ origin: 'http://127.0.0.1:3000', base: '/tocsin' });
      expect(refusal(() => checkOrigin(e, true))).toBeUndefined();
    } finally {
      delete process.env.BASE_PATH;
    }
  });
});

describe('cookies', () => {
  it('are HttpOnly and SameSite, Secure on HTTPS, scoped to the base path', () => {
    const aws = event({ rawPath: '/prod/auth/signin' });
    expect(sessionCookie(aws, 'S'.repeat(43), 3600)).toBe(
      `tocsin_session=${'S'.repeat(43)}; Path=/prod; Max-Age=3600; HttpOnly; SameSite=Strict; Secure`,
    );
    expect(oidcCookie(event(), 'st', 600)).toBe(
      'tocsin_oidc=st; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure',
    );
    const local = event({ host: '127.0.0.1:3000', local: true });
    expect(clearedCookie(local, 'tocsin_session')).toBe(
      'tocsin_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict',
    );
  });

  it('are read from API Gateway’s cookies or the Cookie header; a malformed value reads as empty', () => {
    expect(readCookie(event({ cookies: ['a=1', 'tocsin_session=abc_-9'] }), 'tocsin_session')).toBe('abc_-9');
    expect(readCookie(event({ headers: { cookie: 'x=1; tocsin_session=zz' } }), 'tocsin_session')).toBe('zz');
    expect(readCookie(event({ cookies: ['tocsin_session=<script>'] }), 'tocsin_session')).toBe('');
    expect(readCookie(event({ cookies: ['tocsin_sessionx=1'] }), 'tocsin_session')).toBeUndefined();
    expect(readCookie(event(), 'tocsin_session')).toBeUndefined();
  });
});

describe('app grants', () => {
  const app = (grants: App['grants']): App => ({ id: 42, name: 'a', token: 't', created_at: 0, grants });

  it.each<[App['grants'], 'reader' | 'admin', string | undefined]>([
    [[], 'reader', 'read'],
    [[], 'admin', 'admin'],
    [['read'], 'reader', undefined],
    [['read'], 'admin', 'admin'],
    [['admin'], 'reader', undefined],
    [['admin'], 'admin', undefined],
  ])('an app holding %j on a %s route: missing %s', (grants, kind, missing) => {
    const refused = refusal(() => requireGrant(app(grants), kind));
    expect(refused).toEqual(
      missing
        ? [
            403,
            `app [42] lacks the grant [${missing}]: an operator gives it with npm run admin -- app grant 42 ${missing}`,
          ]
        : undefined,
    );
  });
});
