import { createHash, randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { baseUrl } from '../support/client.ts';
import { addPeople, admin, browse, Jar, send, signInAtProvider } from '../support/people.ts';

/**
 * Single sign-on through OpenID Connect against a real provider (`oidc-provider` on 127.0.0.1,
 * test/support/oidc.ts; the stack's OIDC_ISSUER points at it): the authorization code flow with
 * PKCE, state and nonce, end to end, as a browser follows the redirects; the directory user with the
 * verified e-mail is signed in; every refusal lands on the console's sign-in page with its reason.
 */
const run = randomBytes(3).toString('hex');
const EVE = { uid: 8301, user: `eve-${run}`, email: `eve-${run}@example.com`, username: 'Eve Sso', role: 0 };
const UNVERIFIED = {
  uid: 8302,
  user: `unv-${run}`,
  email: `unverified-${run}@example.com`,
  username: 'Unverified Sso',
};
const NOCLAIM = { uid: 8303, user: `ncl-${run}`, email: `noclaim-${run}@example.com`, username: 'No Claim' };
const KIM = { uid: 8304, user: `kim-${run}`, email: `kim-${run}@example.com`, username: 'Kim Sso', role: 9 };
const FAY = { uid: 8305, user: `fay-${run}`, email: `fay-${run}@example.com`, username: 'Fay Sso' };
const GUS = { uid: 8306, user: `gus-${run}`, email: `gus-${run}@example.com`, username: 'Gus Sso' };

beforeAll(async () => {
  await addPeople([EVE, UNVERIFIED, NOCLAIM, KIM, FAY, GUS]);
});

interface Flow {
  jar: Jar;
  /** Where the service sent the browser last: the console (or the callback, when stopped there). */
  location: string;
}

/**
 * A browser signing in through the service's single sign-on as `email` at the provider (one cookie
 * jar: cookies are per host, and both listen on 127.0.0.1). With `stopAtCallback`, it stops before
 * calling the service's callback and returns its URL.
 */
async function sso(email: string, opts: { stopAtCallback?: boolean; sub?: string } = {}): Promise<Flow> {
  const jar = new Jar();
  const start = await browse(`${baseUrl()}/auth/oidc/start`, jar);
  // The provider's subject: given, else the address in lower case (one person, whatever case is typed).
  const sub = opts.sub ?? email.trim().toLowerCase();
  const callback = await signInAtProvider(start.headers.location as string, email, jar, sub);
  if (opts.stopAtCallback) return { jar, location: callback };
  const back = await browse(callback, jar);
  return { jar, location: back.headers.location as string };
}

const whoIs = async (jar: Jar) => send('/auth/session', { headers: { cookie: jar.header() } });

describe('single sign-on (OpenID Connect)', () => {
  it('sends the browser to the provider with PKCE (S256), state and nonce', async () => {
    const start = await send('/auth/oidc/start');
    const to = new URL(start.headers.location as string);
    expect(start.status).toBe(303);
    expect(`${to.origin}`).toBe(inject('oidc').issuer);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'tocsin-console',
      redirect_uri: `${baseUrl()}/auth/oidc/callback`,
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      state: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      nonce: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      scope: 'openid email profile',
    });
    expect(start.cookies[0]).toMatch(
      /^tocsin_oidc=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax$/,
    );
  });

  it('signs in the directory user whose e-mail the provider verified', async () => {
    // Act
    const flow = await sso(EVE.email.toUpperCase());
    const session = await whoIs(flow.jar);
    // Assert
    expect(flow.location).toBe(`${baseUrl()}/console`);
    expect(session.json).toMatchObject({ code: 0, data: { person: { uid: EVE.uid, email: EVE.email } } });
    expect(flow.jar.cookies.has('tocsin_oidc')).toBe(false);
    const item = (
      await db().send(
        new GetCommand({
          TableName: tableName(),
          Key: keys.session(
            createHash('sha256')
              .update(flow.jar.cookies.get('tocsin_session') as string)
              .digest('hex'),
          ),
        }),
      )
    ).Item;
    expect(item).toMatchObject({ uid: EVE.uid, method: 'oidc' });
  });

  it.each([
    ['an e-mail no directory user has', () => `stranger-${run}@example.com`, 'no-user'],
    ['an e-mail the provider has not verified', () => UNVERIFIED.email, 'unverified'],
  ])('refuses %s on the sign-in page, signing nobody in', async (_what, email, reason) => {
    const flow = await sso(email());
    expect(flow.location).toBe(`${baseUrl()}/console#signin-error=${reason}`);
    expect(flow.jar.cookies.has('tocsin_session')).toBe(false);
    const who = await whoIs(flow.jar);
    expect([who.status, who.json.data.person]).toEqual([200, null]);
  });

  it.each<[string, (callback: URL, jar: Jar) => void, string]>([
    ['a tampered state', (u) => u.searchParams.set('state', randomBytes(32).toString('base64url')), 'state'],
    ['no state cookie (another browser)', (_u, jar) => jar.cookies.delete('tocsin_oidc'), 'state'],
    ['a tampered code', (u) => u.searchParams.set('code', `${u.searchParams.get('code')}x`), 'invalid'],
    ['the provider’s error', (u) => u.searchParams.set('error', 'access_denied'), 'denied'],
  ])('refuses a callback with %s', async (_what, tamper, reason) => {
    // Arrange
    const flow = await sso(EVE.email, { stopAtCallback: true });
    const callback = new URL(flow.location);
    tamper(callback, flow.jar);
    // Act
    const answer = await browse(callback.href, flow.jar);
    // Assert
    expect(answer.status).toBe(303);
    expect(answer.headers.location).toBe(`${baseUrl()}/console#signin-error=${reason}`);
    expect(flow.jar.cookies.has('tocsin_session')).toBe(false);
  });

  it('takes a state once: the same callback again is refused', async () => {
    // Arrange
    const flow = await sso(EVE.email, { stopAtCallback: true });
    const stateCookie = flow.jar.cookies.get('tocsin_oidc') as string;
    const first = await browse(flow.location, flow.jar);
    // Act: replayed, with the state cookie put back
    const replay = new Jar();
    replay.cookies.set('tocsin_oidc', stateCookie);
    const second = await browse(flow.location, replay);
    // Assert
    expect(first.headers.location).toBe(`${baseUrl()}/console`);
    expect(second.headers.location).toBe(`${baseUrl()}/console#signin-error=state`);
    expect(replay.cookies.has('tocsin_session')).toBe(false);
  });

  it.each([
    ['a token without email_verified', () => NOCLAIM.email, 'unverified'],
    // `Kim@…` with the Kelvin sign (U+212A), which lower-cases to `k`: kim is role 9.
    ['an address written with the Kelvin sign for K', () => `\u212Aim-${run}@example.com`, 'bad-email'],
    ['an address padded with spaces', () => ` ${KIM.email} `, 'bad-email'],
    ['an address with a letter outside ASCII', () => `k\u0131m-${run}@example.com`, 'bad-email'],
  ])('refuses %s: nobody is signed in', async (_what, email, reason) => {
    const flow = await sso(email(), { sub: `attacker-${randomBytes(4).toString('hex')}` });
    expect(flow.location).toBe(`${baseUrl()}/console#signin-error=${reason}`);
    expect(flow.jar.cookies.has('tocsin_session')).toBe(false);
    // No session cookie at all: the session check answers that nobody is signed in
    expect((await whoIs(flow.jar)).json).toMatchObject({ code: 0, data: { person: null } });
  });

  it('binds a person to the provider’s (iss, sub) at the first sign-on and matches on it afterwards', async () => {
    // Act: Fay's first sign-on binds her to subject fay-1
    const first = await sso(FAY.email, { sub: `fay-1-${run}` });
    // Another identity of the provider carrying Fay's address (recycled, or an unverified change)
    const other = await sso(FAY.email, { sub: `fay-2-${run}` });
    // Fay's identity after her address changed at the provider (to one the directory does not know)
    const renamed = await sso(`fay-new-${run}@example.com`, { sub: `fay-1-${run}` });
    // Assert
    expect((await whoIs(first.jar)).json.data.person.uid).toBe(FAY.uid);
    expect(other.location).toBe(`${baseUrl()}/console#signin-error=linked`);
    expect(other.jar.cookies.has('tocsin_session')).toBe(false);
    expect((await whoIs(renamed.jar)).json.data.person.uid).toBe(FAY.uid);
    const link = await db().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.ssoIdentity(
          createHash('sha256')
            .update(`${inject('oidc').issuer}\nfay-1-${run}`)
            .digest('hex'),
        ),
      }),
    );
    expect(link.Item).toMatchObject({ uid: FAY.uid, iss: inject('oidc').issuer, sub: `fay-1-${run}` });
    // Act: the operator unbinds her; the other identity may now bind her
    const unlinked = await admin(['user', 'unlink-sso', String(FAY.uid)]);
    const rebound = await sso(FAY.email, { sub: `fay-2-${run}` });
    expect(unlinked.stdout).toContain(`user ${FAY.uid}: unbound`);
    expect((await whoIs(rebound.jar)).json.data.person.uid).toBe(FAY.uid);
  });

  it('refuses a deactivated person, and ends their sessions', async () => {
    // Arrange: Gus is signed in
    const before = await sso(GUS.email);
    expect((await whoIs(before.jar)).status).toBe(200);
    // Act
    const off = await admin(['user', 'deactivate', String(GUS.uid)]);
    const after = await sso(GUS.email);
    // Assert
    expect(off.stdout).toContain(`user ${GUS.uid} (Gus Sso) is deactivated`);
    expect((await whoIs(before.jar)).status).toBe(401);
    expect(after.location).toBe(`${baseUrl()}/console#signin-error=inactive`);
    // Act: active again
    await admin(['user', 'activate', String(GUS.uid)]);
    expect((await whoIs((await sso(GUS.email)).jar)).json.data.person.uid).toBe(GUS.uid);
  });

  it('answers hostile callback parameters with a refusal, never a 5xx', async () => {
    const long = await send(`/auth/oidc/callback?code=${'c'.repeat(5000)}&state=s`);
    const junk = await send('/auth/oidc/callback?state=%00%ff&code=%E0%A4%A', {
      headers: { cookie: 'tocsin_oidc=%00' },
    });
    expect([long.status, long.json.code]).toEqual([422, 422]);
    expect([junk.status, junk.headers.location]).toEqual([303, `${baseUrl()}/console#signin-error=state`]);
  });
});
