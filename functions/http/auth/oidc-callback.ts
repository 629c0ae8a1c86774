import { finishSso, SsoRefused } from '#shared/domain/signin/oidc.ts';
import { oidcCallbackSchema } from '#shared/domain/auth/schemas.ts';
import { signInSettings } from '#shared/domain/auth/settings.ts';
import { startSession } from '#shared/domain/signin/signin.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { httpHandler } from '#shared/http/handler.ts';
import {
  clearedCookie,
  OIDC_COOKIE,
  readCookie,
  serviceLocation,
  sessionCookie,
} from '#shared/http/session.ts';
import { redirect, signInPage } from '#shared/http/sso.ts';
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
  async (_input, ctx) => {
    const where = serviceLocation(ctx.event);
    if (!where) throw new NotFoundError('single sign-on needs the service address of the request');
    // The state cookie has done its work whatever happens.
    ctx.cookies.push(clearedCookie(ctx.event, OIDC_COOKIE));
    const callbackUrl = new URL(`${where.origin}${where.base}/auth/oidc/callback`);
    callbackUrl.search = ctx.event.rawQueryString ?? '';
    try {
      const user = await finishSso({ callbackUrl, cookieState: readCookie(ctx.event, OIDC_COOKIE) });
      const signedIn = await startSession(user, 'oidc');
      ctx.cookies.push(sessionCookie(ctx.event, signedIn.id, signInSettings().sessionMaxSeconds));
      return redirect(`${where.origin}${where.base}/console`);
    } catch (err) {
      if (!(err instanceof SsoRefused)) throw err;
      if (err.reason === 'off') throw new NotFoundError('single sign-on is not configured');
      return redirect(signInPage(where, err.reason));
    }
  },
);
