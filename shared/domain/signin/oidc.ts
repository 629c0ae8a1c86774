import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createHash, timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import { nowSeconds } from '../../clock.ts';
import { perContainer } from '../../container.ts';
import { db, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { logger } from '../../log.ts';
import type { User } from '../directory/model.ts';
import { isLoopback, type OidcSettings, signInSettings } from '../auth/settings.ts';
import { sdkClient } from '../../platform.ts';
import { audit } from '../auth/audit.ts';
import { getCredential } from '../auth/credentials.ts';
import { bindIdentity, identityOf, personOfIdentity } from '../auth/sso-identity.ts';
import { getUser } from '../directory/repository.ts';
import { personByEmail } from './signin.ts';

/**
 * Single sign-on through OpenID Connect (`openid-client`): the authorization code flow with PKCE
 * (S256), `state` and `nonce`. The ID token is verified by the library: issuer, audience, expiry,
 * nonce, and its signature with a key of the provider's JWKS (non-repudiation checks on: a token is
 * taken only when signed, even though it arrives straight from the token endpoint over TLS).
 *
 * The person is bound to the token's `(iss, sub)` at their first sign-on and found by it afterwards
 * (auth/sso-identity.ts). The first sign-on finds them by the token's `email`: a plain ASCII address
 * (no other characters, no padding), compared exactly (ASCII case aside) with the directory's, and
 * verified by the provider (`email_verified` true; OIDC_ALLOW_UNVERIFIED_EMAIL=1 takes an address
 * the provider does not mark, for providers that never send the claim). A deactivated person is
 * refused. The issuer is operator configuration, trusted like the notification providers' base
 * URLs: the calls to it do not go through the outbound URL guard (an enterprise provider may well
 * sit on a private network).
 *
 * A login in flight is an item `OIDC#<sha256(state)>` (`ttl` 10 minutes) holding the PKCE verifier
 * and the nonce, taken (deleted) by the callback: a state works once.
 */
export const LOGIN_SECONDS = 600;

/** Why a single sign-on was refused: the sign-in page shows a message for each. */
export type SsoRefusal =
  | 'denied'
  | 'state'
  | 'invalid'
  | 'no-email'
  | 'bad-email'
  | 'unverified'
  | 'no-user'
  | 'linked'
  | 'inactive'
  | 'unavailable'
  | 'off';

export class SsoRefused extends Error {
  constructor(readonly reason: SsoRefusal) {
    super(`single sign-on refused: ${reason}`);
  }
}

/** The provider's configuration, once per container (its client secret read with it). */
const discoveredOf = perContainer((): { config?: Promise<client.Configuration> } => ({}));

async function clientSecret(s: OidcSettings): Promise<string | undefined> {
  if (s.clientSecret) return s.clientSecret;
  if (!s.clientSecretArn) return undefined;
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const secrets = sdkClient('secretsmanager', (o) => new SecretsManagerClient({ region: process.env.AWS_REGION, ...o }));
  const out = await secrets.send(new GetSecretValueCommand({ SecretId: s.clientSecretArn }));
  // `none` (the stack's placeholder): a public client, authenticated by PKCE alone.
  const secret = (out.SecretString ?? '').trim();
  return secret && secret !== 'none' ? secret : undefined;
}

/** The provider's configuration (discovery document, JWKS on demand), once per container. */
function provider(s: OidcSettings): Promise<client.Configuration> {
  const discovered = discoveredOf();
  discovered.config ??= (async () => {
    const secret = await clientSecret(s);
    const url = new URL(s.issuer);
    const insecure = url.protocol === 'http:' && isLoopback(url.hostname);
    const config = await client.discovery(
      url,
      s.clientId,
      secret ? { client_secret: secret } : undefined,
      secret ? client.ClientSecretBasic(secret) : client.None(),
      { timeout: 5, execute: insecure ? [client.allowInsecureRequests] : [] },
    );
    client.enableNonRepudiationChecks(config);
    return config;
  })().catch((err: unknown) => {
    // Not remembered: the next sign-in tries again.
    discovered.config = undefined;
    throw err;
  });
  return discovered.config;
}

function settings(): OidcSettings {
  const s = signInSettings().oidc;
  if (!s) throw new SsoRefused('off');
  return s;
}

const stateHash = (state: string) => createHash('sha256').update(state, 'utf8').digest('hex');

/** Where the browser goes to sign in at the provider, and the state its callback must bring back. */
export async function startSso(redirectUri: string): Promise<{ url: string; state: string }> {
  const s = settings();
  let config: client.Configuration;
  try {
    config = await provider(s);
  } catch (err) {
    logger.warn('single sign-on: the provider cannot be reached', { error: errorName(err) });
    throw new SsoRefused('unavailable');
  }
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const now = nowSeconds();
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.oidcLogin(stateHash(state)),
        entity: 'oidc_login',
        schema_version: SCHEMA_VERSION,
        verifier,
        nonce,
        redirect_uri: redirectUri,
        expires_at: now + LOGIN_SECONDS,
        ttl: now + LOGIN_SECONDS,
      },
    }),
  );
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { url: url.href, state };
}

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** An error's name and OAuth code only (its message may quote a provider's answer). */
function errorName(err: unknown): string {
  const e = err as { name?: string; code?: string; error?: string };
  return [e?.name, e?.code, e?.error].filter(Boolean).join(' ') || 'error';
}

/**
 * The callback: the state must be the one this browser left with (its cookie) and a login in flight
 * (taken once); the code is exchanged with the PKCE verifier and the ID token verified; its e-mail
 * names the person. Throws SsoRefused with the reason.
 */
export async function finishSso(input: { callbackUrl: URL; cookieState: string | undefined }): Promise<User> {
  try {
    const user = await completeSso(input);
    audit('signin', { uid: user.uid, method: 'oidc' });
    return user;
  } catch (err) {
    if (err instanceof SsoRefused && err.reason !== 'off')
      audit('signin-failed', { method: 'oidc', reason: err.reason });
    throw err;
  }
}

async function completeSso(input: { callbackUrl: URL; cookieState: string | undefined }): Promise<User> {
  const s = settings();
  const params = input.callbackUrl.searchParams;
  const state = params.get('state') ?? '';
  if (params.get('error')) {
    logger.info('single sign-on: the provider answered with an error', {
      error: (params.get('error') ?? '').slice(0, 64),
    });
    throw new SsoRefused('denied');
  }
  if (!state || !input.cookieState || !sameText(state, input.cookieState)) throw new SsoRefused('state');
  const taken = await db().send(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.oidcLogin(stateHash(state)),
      ReturnValues: 'ALL_OLD',
    }),
  );
  const login = taken.Attributes;
  if (!login || Number(login.expires_at) <= nowSeconds()) throw new SsoRefused('state');
  let config: client.Configuration;
  try {
    config = await provider(s);
  } catch (err) {
    logger.warn('single sign-on: the provider cannot be reached', { error: errorName(err) });
    throw new SsoRefused('unavailable');
  }
  let claims: client.IDToken | undefined;
  try {
    const tokens = await client.authorizationCodeGrant(config, input.callbackUrl, {
      pkceCodeVerifier: String(login.verifier),
      expectedState: state,
      expectedNonce: String(login.nonce),
      idTokenExpected: true,
    });
    claims = tokens.claims();
  } catch (err) {
    logger.warn('single sign-on: the code or the ID token was refused', { error: errorName(err) });
    throw new SsoRefused('invalid');
  }
  if (!claims || typeof claims.iss !== 'string' || typeof claims.sub !== 'string' || !claims.sub)
    throw new SsoRefused('invalid');
  const user = await personOfToken({ ...claims, iss: claims.iss, sub: claims.sub }, s);
  if ((await getCredential(user.uid))?.deactivated_at !== undefined) throw new SsoRefused('inactive');
  return user;
}

/** A plain e-mail address: printable ASCII only, no white space, one `@` between two parts. */
const PLAIN_EMAIL = /^[!#-'*+\-./0-9=?A-Z^-~]+@[A-Za-z0-9.-]+$/;

/** Why an `email` claim cannot name a person at a first sign-on, if it cannot. */
export function emailRefusal(
  claims: { email?: unknown; email_verified?: unknown },
  allowUnverified: boolean,
): SsoRefusal | undefined {
  const email = claims.email;
  if (typeof email !== 'string' || email === '') return 'no-email';
  // Exact: no padding, no letters outside ASCII (`K` written as the Kelvin sign U+212A lower-cases
  // to `k`), nothing a directory address could be confused with.
  if (email.length > 254 || !PLAIN_EMAIL.test(email)) return 'bad-email';
  const verified = claims.email_verified === true || claims.email_verified === 'true';
  if (!verified && !(allowUnverified && claims.email_verified === undefined)) return 'unverified';
  return undefined;
}

/** The person a verified token stands for: bound by `(iss, sub)`, else found by e-mail and bound now. */
async function personOfToken(
  claims: { iss: string; sub: string; email?: unknown; email_verified?: unknown },
  s: OidcSettings,
): Promise<User> {
  const identity = identityOf(claims.iss, claims.sub);
  for (let attempt = 0; attempt < 2; attempt++) {
    const bound = await personOfIdentity(identity);
    if (bound !== undefined) {
      const user = await getUser(bound);
      if (!user) throw new SsoRefused('no-user');
      return user;
    }
    const refusal = emailRefusal(claims, s.allowUnverifiedEmail);
    if (refusal) throw new SsoRefused(refusal);
    const email = claims.email as string;
    const user = await personByEmail(email);
    // The index matches case-insensitively; the address itself must be the directory's, byte for
    // byte but for ASCII case.
    if (!user || (user.email ?? '').toLowerCase() !== email.toLowerCase()) throw new SsoRefused('no-user');
    const outcome = await bindIdentity(user.uid, identity, claims, nowSeconds() * 1000);
    if (outcome === 'other') {
      logger.warn('single sign-on: the person is bound to another identity of the provider', {
        uid: user.uid,
      });
      throw new SsoRefused('linked');
    }
    if (outcome === 'bound') {
      audit('sso-link', { uid: user.uid, issuer: claims.iss });
      return user;
    }
    // Bound by a parallel first sign-on meanwhile: read the link again.
  }
  throw new SsoRefused('invalid');
}

/** Tests: forget the discovered provider. */
export function resetSso(): void {
  discoveredOf().config = undefined;
}
