import { signInSettings } from '../domain/auth/settings.ts';
import { NotFoundError } from '../domain/errors.ts';
import { finishSso, SsoRefused } from '../domain/signin/oidc.ts';
import { startSession } from '../domain/signin/signin.ts';
import type { HttpResult, RequestContext } from './handler.ts';
import { clearedCookie, OIDC_COOKIE, readCookie, serviceLocation, sessionCookie } from './session.ts';
import { redirect, signInPage } from './sso.ts';

/**
 * The answer of `GET /auth/oidc/callback` (its handler says what it does): the session cookie and a
 * redirect to the console, or a redirect to the console's sign-in page with the reason of a refusal.
 */
export async function oidcCallback(ctx: RequestContext): Promise<HttpResult> {
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
}
