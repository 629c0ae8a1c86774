import { signInSchema } from '#shared/domain/auth/schemas.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { csrfToken } from '#shared/domain/auth/sessions.ts';
import { signInSettings } from '#shared/domain/auth/settings.ts';
import { signInWithPassword } from '#shared/domain/signin/signin.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { checkOrigin, sessionCookie, sourceAddress } from '#shared/http/session.ts';
import type { SignedInAnswer } from '#shared/domain/auth/responses.ts';

/**
 * POST /auth/signin {account, password}: a person signs in to the console with the directory's
 * account name (or e-mail address) and their password. On success the answer sets the session cookie
 * (HttpOnly) and gives the person and the session's CSRF token. An unknown account, a person without
 * a password and a wrong password get the same 401; too many failed tries for the account or from the
 * address get 429 with Retry-After, the right password too.
 */
export const handler = httpHandler<{ account: string; password: string }, SignedInAnswer>(
  { auth: 'none', input: 'json', schema: signInSchema },
  async (input, ctx) => {
    checkOrigin(ctx.event, false);
    // An account name nobody has is counted under a digest keyed with the seal key.
    await loadSealKey();
    const signedIn = await signInWithPassword({ ...input, address: sourceAddress(ctx.event) });
    ctx.cookies.push(sessionCookie(ctx.event, signedIn.id, signInSettings().sessionMaxSeconds));
    return {
      person: signedIn.person,
      csrf_token: csrfToken(signedIn.id),
      expires_at: signedIn.expiresAt,
    };
  },
);
