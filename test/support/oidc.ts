import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/**
 * A real OpenID Connect provider for the tests (`oidc-provider`, the certified implementation) on
 * 127.0.0.1: discovery, JWKS (an RS256 key made for the run), the authorization endpoint with PKCE,
 * the token endpoint (client_secret_basic). Its login page asks for an e-mail address (and, hidden
 * from people, a subject) and signs in whoever types it: the subject (`sub`) is the one given, else
 * the address; `email_verified` is true, false for an address starting with `unverified`, and left
 * out of the token for one starting with `noclaim` (as providers that never send it do). Consent is
 * given at once.
 *
 * The listener starts first (the stack needs the issuer URL in its environment); the provider is
 * made once the stack's callback URL is known (`configure`).
 */
export const OIDC_CLIENT = { id: 'tocsin-console', secret: randomBytes(24).toString('hex') };

export interface TestOidcProvider {
  issuer: string;
  configure(redirectUri: string): Promise<void>;
  stop(): Promise<void>;
}

const page = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Test IdP</title></head><body>${body}</body></html>`;

async function formBody(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

type Payload = Record<string, unknown> & { uid?: string; userCode?: string; grantId?: string };

/**
 * The provider's storage for one test run: a Map per run (the provider's own memory adapter does the
 * same, but announces itself with a warning on every start). Nothing outlives the run, so nothing
 * expires.
 */
function runAdapter() {
  const items = new Map<string, Payload>();
  return class RunAdapter {
    constructor(readonly model: string) {}
    private key = (id: string) => `${this.model}:${id}`;
    async upsert(id: string, payload: Payload) {
      items.set(this.key(id), payload);
    }
    async find(id: string) {
      return items.get(this.key(id));
    }
    async findByUid(uid: string) {
      return [...items.entries()].find(([k, p]) => k.startsWith(`${this.model}:`) && p.uid === uid)?.[1];
    }
    async findByUserCode(userCode: string) {
      return [...items.entries()].find(
        ([k, p]) => k.startsWith(`${this.model}:`) && p.userCode === userCode,
      )?.[1];
    }
    async consume(id: string) {
      const p = items.get(this.key(id));
      if (p) p.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      items.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const [k, p] of items) if (p.grantId === grantId) items.delete(k);
    }
  };
}

export async function startOidcProvider(): Promise<TestOidcProvider> {
  let provider: Provider | undefined;
  /** The e-mail address of each subject, as last typed. */
  const emails = new Map<string, string>();
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    try {
      if (!provider) {
        res.writeHead(503).end();
        return;
      }
      const url = new URL(req.url ?? '/', 'http://idp');
      const m = /^\/interaction\/([A-Za-z0-9_-]+)(\/login)?$/.exec(url.pathname);
      if (!m) {
        provider.callback()(req, res);
        return;
      }
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login' && req.method === 'POST' && m[2]) {
        const form = await formBody(req);
        // The address exactly as typed (a test may pad it or use letters outside ASCII).
        const email = form.get('email') ?? '';
        const sub = form.get('sub') || email.trim();
        emails.set(sub, email);
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: sub } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      if (details.prompt.name === 'login') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          page(`<h1>Test identity provider</h1>
<form method="post" action="/interaction/${m[1]}/login">
<label>E-mail <input name="email" type="email" autocomplete="off"></label>
<button type="submit">Continue</button>
</form>`),
        );
        return;
      }
      // Consent: given at once for what the client asked.
      const grant = new provider.Grant({
        accountId: String(details.session?.accountId),
        clientId: String(details.params.client_id),
      });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await provider.interactionFinished(
        req,
        res,
        { consent: { grantId } },
        { mergeWithLastSubmission: true },
      );
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`test idp: ${(err as Error).message}`);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    async configure(redirectUri) {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' };
      provider = new Provider(issuer, {
        adapter: runAdapter(),
        clients: [
          {
            client_id: OIDC_CLIENT.id,
            client_secret: OIDC_CLIENT.secret,
            redirect_uris: [redirectUri],
            response_types: ['code'],
            grant_types: ['authorization_code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        pkce: { required: () => true },
        jwks: { keys: [jwk] },
        cookies: { keys: [randomBytes(16).toString('hex')] },
        claims: { openid: ['sub'], email: ['email', 'email_verified'] },
        // The e-mail in the ID token itself (as Cognito and most enterprise providers put it).
        conformIdTokenClaims: false,
        features: { devInteractions: { enabled: false } },
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        findAccount: async (_ctx, sub) => ({
          accountId: sub,
          claims: async () => {
            const email = emails.get(sub) ?? sub;
            return email.startsWith('noclaim')
              ? { sub, email }
              : { sub, email, email_verified: !email.startsWith('unverified') };
          },
        }),
      });
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
