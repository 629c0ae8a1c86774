import type { SessionState } from '#shared/domain/auth/responses.ts';
import { csrfToken } from '#shared/domain/auth/sessions.ts';
import { signInSettings } from '#shared/domain/auth/settings.ts';
import { AppError } from '#shared/domain/errors.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { authenticatePerson, readCookie, SESSION_COOKIE } from '#shared/http/session.ts';

/**
 * GET /auth/session: who is signed in (the session cookie), the session's CSRF token for the
 * requests that change something, and its limits. Without a session cookie nobody is: `person` null
 * (the console asks on every load; that is no error). A cookie whose session no longer stands: 401.
 * Either way `sso` tells the sign-in page whether to offer single sign-on.
 */
export const handler = httpHandler<unknown, SessionState>(
  { auth: 'none', input: 'none' },
  async (_input, ctx) => {
    const settings = signInSettings();
    if (readCookie(ctx.event, SESSION_COOKIE) === undefined)
      return { person: null, sso: settings.oidc !== undefined };
    const signedIn = await authenticatePerson(ctx.event).catch((err: unknown) => {
      if (err instanceof AppError && err.status === 401) {
        throw new AppError(401, 401, err.message, { sso: settings.oidc !== undefined }, err.headers);
      }
      throw err;
    });
    return {
      person: signedIn.person,
      csrf_token: csrfToken(signedIn.id),
      idle_minutes: settings.sessionIdleSeconds / 60,
      sso: settings.oidc !== undefined,
    };
  },
);
