import { oidcCallbackSchema } from '#shared/domain/auth/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { oidcCallback } from '#shared/http/sso-callback.ts';
import { anyone } from '#shared/http/auth/public.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/auth/oidc-callback.ts';

/**
 * GET /auth/oidc/callback?code=&state=: where the OpenID Connect provider sends the browser back.
 * The state must be the one this browser left with; the code is exchanged (with the PKCE verifier),
 * the ID token verified, and the directory user with the token's verified e-mail is signed in: the
 * session cookie is set and the browser goes to the console. Any refusal goes to the console's
 * sign-in page with its reason (`#signin-error=...`), nothing stored.
 */
export const handler = httpHandler(
  { auth: anyone, input: queryInput, schema: oidcCallbackSchema, validate, rawResponse: true },
  (_input, ctx) => oidcCallback(ctx),
);
