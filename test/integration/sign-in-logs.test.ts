import { randomBytes } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { resetSignInSettings } from '../../shared/domain/auth/settings.ts';
import { lambdaContext } from '../../shared/local/lambda.ts';
import { logger } from '../../shared/log.ts';
import { baseUrl } from '../support/client.ts';
import { addPeople, Jar, signInAtProvider } from '../support/people.ts';

/**
 * No password, session id, OpenID Connect code, state or token reaches a log line. The sign-in
 * handlers run here, in the test worker (on the stack's table, as `npm run invoke` runs them), at
 * LOG_LEVEL DEBUG, through every path that logs: right and wrong passwords, a locked account,
 * hostile input, forged cookies, a password change, sign out, and single sign-on against the test
 * provider (a good login, a tampered code, the provider's error). Every line written is searched.
 */
const run = randomBytes(3).toString('hex');
const KIM = { uid: 8501, user: `kim-${run}`, email: `kim-${run}@example.com`, username: 'Kim Logs' };
const PASSWORD = `kim-${run}-secret-password`;
const NEW_PASSWORD = `kim-${run}-second-secret`;

type Handler = (
  event: APIGatewayProxyEventV2,
  context: unknown,
) => Promise<APIGatewayProxyStructuredResultV2>;

const host = () => new URL(baseUrl()).host;

function event(
  method: string,
  path: string,
  opts: {
    json?: unknown;
    body?: string;
    query?: string;
    cookies?: string[];
    headers?: Record<string, string>;
  } = {},
): APIGatewayProxyEventV2 {
  const query = new URLSearchParams(opts.query ?? '');
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: opts.query ?? '',
    ...(opts.cookies ? { cookies: opts.cookies } : {}),
    headers: {
      host: host(),
      origin: `http://${host()}`,
      ...(opts.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    ...(opts.query ? { queryStringParameters: Object.fromEntries(query) } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: host(),
      domainPrefix: 'local',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '198.51.100.77', userAgent: 'test' },
      requestId: randomBytes(8).toString('hex'),
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    body: opts.json !== undefined ? JSON.stringify(opts.json) : opts.body,
    isBase64Encoded: false,
  } as APIGatewayProxyEventV2;
}

const load = async (file: string) =>
  ((await import(`../../functions/http/auth/${file}.ts`)) as { handler: Handler }).handler;
const invoke = (handler: Handler, e: APIGatewayProxyEventV2) => handler(e, lambdaContext('sign-in-logs'));
const cookieOf = (res: APIGatewayProxyStructuredResultV2, name: string) =>
  (res.cookies ?? []).map((c) => /^([^=]+)=([^;]*)/.exec(c)).find((m) => m?.[1] === name)?.[2];

/** Everything written to stdout and stderr while `run` runs (log lines, warnings, errors). */
async function output(run: () => Promise<void>): Promise<string> {
  const chunks: string[] = [];
  const capture = (chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    await run();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return chunks.join('');
}

const saved = { ...process.env };

beforeAll(async () => {
  await addPeople([{ ...KIM, password: PASSWORD }]);
  // The stack's single sign-on settings, in this worker too.
  const oidc = inject('oidc');
  Object.assign(process.env, {
    OIDC_ISSUER: oidc.issuer,
    OIDC_CLIENT_ID: oidc.clientId,
    OIDC_CLIENT_SECRET: oidc.clientSecret,
    SESSION_IDLE_MINUTES: '2880',
    SESSION_MAX_HOURS: '168',
  });
  resetSignInSettings();
  logger.setLogLevel('DEBUG');
});

afterAll(() => {
  logger.setLogLevel('ERROR');
  process.env = saved;
  resetSignInSettings();
});

describe('secrets in logs', () => {
  it('logs no password, session id, CSRF token, code, state or token on any sign-in path', async () => {
    // Arrange
    const [signIn, session, signOut, password, start, callback] = await Promise.all(
      ['sign-in', 'get-session', 'sign-out', 'change-password', 'oidc-start', 'oidc-callback'].map(load),
    );
    const secrets: string[] = [PASSWORD, NEW_PASSWORD];
    // Act: every path, its output captured
    const text = await output(async () => {
      // wrong passwords, a malformed body holding the password, a password typed as the account
      for (let i = 0; i < 2; i++)
        await invoke(
          signIn,
          event('POST', '/auth/signin', { json: { account: KIM.user, password: `${PASSWORD}-${i}` } }),
        );
      await invoke(
        signIn,
        event('POST', '/auth/signin', {
          body: `{"account":"${KIM.user}","password":"${PASSWORD}`,
          headers: { 'content-type': 'application/json' },
        }),
      );
      await invoke(
        signIn,
        event('POST', '/auth/signin', { json: { account: PASSWORD, password: PASSWORD } }),
      );
      const ok = await invoke(
        signIn,
        event('POST', '/auth/signin', { json: { account: KIM.email, password: PASSWORD } }),
      );
      const id = cookieOf(ok, 'tocsin_session') as string;
      const csrf = JSON.parse(String(ok.body)).data.csrf_token as string;
      secrets.push(id, csrf);
      await invoke(session, event('GET', '/auth/session', { cookies: [`tocsin_session=${id}`] }));
      await invoke(
        session,
        event('GET', '/auth/session', { cookies: [`tocsin_session=${id.slice(0, -2)}zz`] }),
      );
      const changed = await invoke(
        password,
        event('PUT', '/auth/password', {
          json: { current: PASSWORD, password: NEW_PASSWORD },
          cookies: [`tocsin_session=${id}`],
          headers: { 'x-csrf-token': csrf },
        }),
      );
      const second = cookieOf(changed, 'tocsin_session') as string;
      const csrf2 = JSON.parse(String(changed.body)).data.csrf_token as string;
      secrets.push(second, csrf2);
      await invoke(
        signOut,
        event('POST', '/auth/signout', { json: {}, cookies: [`tocsin_session=${second}`] }),
      );
      await invoke(
        signOut,
        event('POST', '/auth/signout', {
          json: { everywhere: 1 },
          cookies: [`tocsin_session=${second}`],
          headers: { 'x-csrf-token': csrf2 },
        }),
      );

      // Single sign-on: a good one, a tampered code, the provider's error.
      for (const tamper of ['none', 'code', 'error']) {
        const jar = new Jar();
        const started = await invoke(start, event('GET', '/auth/oidc/start'));
        const state = cookieOf(started, 'tocsin_oidc') as string;
        const back = new URL(await signInAtProvider(String(started.headers?.location), KIM.email, jar));
        const code = back.searchParams.get('code') as string;
        secrets.push(state, code);
        if (tamper === 'code') back.searchParams.set('code', `${code}x`);
        if (tamper === 'error') back.searchParams.set('error', 'access_denied');
        const done = await invoke(
          callback,
          event('GET', '/auth/oidc/callback', {
            query: back.search.slice(1),
            cookies: [`tocsin_oidc=${state}`],
          }),
        );
        const signedIn = cookieOf(done, 'tocsin_session');
        if (signedIn) secrets.push(signedIn);
        expect(String(done.headers?.location)).toMatch(tamper === 'none' ? /\/console$/ : /#signin-error=/);
      }
    });
    // Assert: something was logged (the refusals), and no secret is in it
    expect(text).toContain('single sign-on: the code or the ID token was refused');
    for (const secret of secrets)
      expect(text.includes(secret), `a secret (${secret.length} chars) in the logs`).toBe(false);
    // No JWT (an ID or access token) either.
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/);
  });
});
