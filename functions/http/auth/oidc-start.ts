import { LOGIN_SECONDS, SsoRefused, startSso } from '#shared/domain/signin/oidc.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { oidcCookie, serviceLocation } from '#shared/http/session.ts';
import { redirect, signInPage } from '#shared/http/sso.ts';
import { anyone } from '#shared/http/auth/public.ts';
import { noInput } from '#shared/http/input.ts';

/**
 * GET /auth/oidc/start: single sign-on. Sends the browser to the OpenID Connect provider (authorization
 * code with PKCE, state and nonce); the provider sends it back to `<base>/auth/oidc/callback`. 404
 * when single sign-on is not configured.
 */
export const handler = httpHandler(
  { auth: anyone, input: noInput, rawResponse: true },
  async (_input, ctx) => {
    const where = serviceLocation(ctx.event);
    if (!where) throw new NotFoundError('single sign-on needs the service address of the request');
    try {
      const { url, state } = await startSso(`${where.origin}${where.base}/auth/oidc/callback`);
      ctx.cookies.push(oidcCookie(ctx.event, state, LOGIN_SECONDS));
      return redirect(url);
    } catch (err) {
      if (!(err instanceof SsoRefused)) throw err;
      if (err.reason === 'off') throw new NotFoundError('single sign-on is not configured');
      return redirect(signInPage(where, err.reason));
    }
  },
);
