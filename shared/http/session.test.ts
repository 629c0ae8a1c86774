import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { resetConfig } from '../config/env.ts';
import { mustBindRequests } from '../domain/auth/service.ts';
import { logger } from '../log.ts';
import { grantFor } from './handler.ts';
import type { App, Grant } from '../domain/auth/apps.ts';
import { csrfMatches, csrfToken, hashSessionId, isSessionId } from '../domain/auth/sessions.ts';
import { AppError } from '../domain/errors.ts';
import { actAs, requireGrant } from './app-auth.ts';
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
  it('are __Host- cookies over HTTPS (Secure, Path=/), plain ones locally scoped to the base path', () => {
    const aws = event({ rawPath: '/prod/auth/signin' });
    expect(sessionCookie(aws, 'S'.repeat(43), 3600)).toBe(
      `__Host-tocsin_session=${'S'.repeat(43)}; Path=/; Max-Age=3600; HttpOnly; SameSite=Strict; Secure`,
    );
    expect(oidcCookie(event(), 'st', 600)).toBe(
      '__Host-tocsin_oidc=st; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure',
    );
    const local = event({ host: '127.0.0.1:3000', local: true });
    expect(clearedCookie(local, 'tocsin_session')).toBe(
      'tocsin_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict',
    );
    process.env.BASE_PATH = '/api';
    try {
      expect(sessionCookie(local, 'S'.repeat(43), 60)).toMatch(/^tocsin_session=S{43}; Path=\/api; /);
    } finally {
      delete process.env.BASE_PATH;
    }
  });

  it('are read by their name on the connection: the first well-formed value of that name', () => {
    const local = (over: Partial<APIGatewayProxyEventV2>) => event({ local: true, ...over });
    expect(readCookie(local({ cookies: ['a=1', 'tocsin_session=abc_-9'] }), 'tocsin_session')).toBe('abc_-9');
    expect(readCookie(local({ headers: { cookie: 'x=1; tocsin_session=zz' } }), 'tocsin_session')).toBe('zz');
    expect(readCookie(local({ cookies: ['tocsin_session=<script>'] }), 'tocsin_session')).toBe('');
    // A malformed cookie planted before the real one does not hide it.
    expect(
      readCookie(local({ cookies: ['tocsin_session=<x>', 'tocsin_session=real_1'] }), 'tocsin_session'),
    ).toBe('real_1');
    expect(readCookie(local({ cookies: ['tocsin_sessionx=1'] }), 'tocsin_session')).toBeUndefined();
    expect(readCookie(local({}), 'tocsin_session')).toBeUndefined();
    // Over HTTPS only the __Host- cookie counts: an unprefixed one may have been set by a subdomain.
    expect(readCookie(event({ cookies: ['tocsin_session=abc'] }), 'tocsin_session')).toBeUndefined();
    expect(readCookie(event({ cookies: ['__Host-tocsin_session=abc'] }), 'tocsin_session')).toBe('abc');
  });
});

describe('app grants', () => {
  const app = (grants: App['grants']): App => ({
    id: 42,
    name: 'a',
    token: 't',
    created_at: 0,
    grants,
    uids: [],
    request_signature: false,
  });

  it.each<[App['grants'], Grant, string | undefined]>([
    [[], 'read', 'read'],
    [[], 'admin', 'admin'],
    [['read'], 'read', undefined],
    [['read'], 'operate', 'operate'],
    [['read'], 'admin', 'admin'],
    [['operate'], 'read', undefined],
    [['operate'], 'operate', undefined],
    [['operate'], 'admin', 'admin'],
    [['admin'], 'read', undefined],
    [['admin'], 'operate', undefined],
    [['admin'], 'admin', undefined],
  ])('an app holding %j on a route that needs %s: missing %s', (grants, needed, missing) => {
    const refused = refusal(() => requireGrant(app(grants), needed));
    expect(refused).toEqual(
      missing
        ? [
            403,
            `app [42] lacks the grant [${missing}]: an operator gives it with npm run admin -- app grant 42 ${missing}`,
          ]
        : undefined,
    );
  });

  it('lets a bound app act only as the users it is bound to', () => {
    const bound = { ...app(['read']), uids: [3, 5] };
    const e = event({ routeKey: 'GET /alarmtask/list' });
    expect(refusal(() => actAs(bound, 5, e))).toBeUndefined();
    expect(refusal(() => actAs(bound, undefined, e))).toBeUndefined();
    expect(refusal(() => actAs(bound, 1, e))).toEqual([
      403,
      'app [42] may not act as user [1]: it acts only for the users it is bound to',
    ]);
    expect(refusal(() => actAs(app(['read']), 1, e))).toBeUndefined();
  });
});

describe('the grant a route needs, and the operator settings that harden the interface', () => {
  const saved = { ...process.env };
  const withEnv = (env: Record<string, string>, fn: () => void) => {
    Object.assign(process.env, {
      TABLE_NAME: 'unit',
      SEAL_KEY: Buffer.alloc(32, 1).toString('base64'),
      ...env,
    });
    resetConfig();
    try {
      fn();
    } finally {
      process.env = { ...saved };
      resetConfig();
    }
  };

  it('asks read, operate or admin beyond the interface; on the workflow routes only with STRICT_APP_GRANTS', () => {
    withEnv({}, () => {
      expect(grantFor('reader', {})).toBe('read');
      expect(grantFor('reader', { grant: 'operate' })).toBe('operate');
      expect(grantFor('admin', {})).toBe('admin');
      expect(grantFor('app|person', { grant: 'operate' })).toBeUndefined();
      expect(grantFor('app', {})).toBeUndefined();
    });
    withEnv({ STRICT_APP_GRANTS: '1' }, () => {
      expect(grantFor('app|person', { grant: 'operate' })).toBe('operate');
      expect(grantFor('app|person', { grant: 'read' })).toBe('read');
      expect(grantFor('app|person', {})).toBeUndefined();
    });
  });

  it('requires the request-bound signature of apps that opted in, and per APP_REQUEST_SIGNATURE', () => {
    const app = (grants: App['grants'], request_signature = false) => ({ grants, request_signature });
    withEnv({}, () => {
      expect(mustBindRequests(app([]))).toBe(false);
      expect(mustBindRequests(app(['admin']))).toBe(false);
      expect(mustBindRequests(app([], true))).toBe(true);
    });
    withEnv({ APP_REQUEST_SIGNATURE: 'grants' }, () => {
      expect(mustBindRequests(app([]))).toBe(false);
      expect(mustBindRequests(app(['read']))).toBe(true);
    });
    withEnv({ APP_REQUEST_SIGNATURE: 'all' }, () => expect(mustBindRequests(app([]))).toBe(true));
    withEnv({ APP_REQUEST_SIGNATURE: 'sometimes' }, () => {
      expect(() => mustBindRequests(app([]))).toThrow('APP_REQUEST_SIGNATURE must be optional, grants, all');
    });
  });

  it('logs every app call with the app and the acting uid, and nothing of its credentials', () => {
    const lines: unknown[] = [];
    const spy = vi.spyOn(logger, 'info').mockImplementation((...args: unknown[]) => {
      lines.push(args);
    });
    try {
      const e = event({
        routeKey: 'PUT /alarmtask/status',
        headers: { 'x-app-sign': 'f'.repeat(64), 'x-app-nonce': 'n'.repeat(22) },
      });
      actAs(
        {
          id: 42,
          name: 'a',
          token: 'secret-token',
          created_at: 0,
          grants: ['operate'],
          uids: [],
          request_signature: false,
        },
        7,
        e,
      );
    } finally {
      spy.mockRestore();
    }
    expect(lines).toEqual([
      ['audit: app-call', { audit: 'app-call', app: 42, uid: 7, route: 'PUT /alarmtask/status' }],
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/secret-token|ffff|nnnn/);
  });
});
