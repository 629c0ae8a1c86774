import { changePasswordSchema } from '#shared/domain/auth/schemas.ts';
import { csrfToken } from '#shared/domain/auth/sessions.ts';
import { signInSettings } from '#shared/domain/auth/settings.ts';
import { changeOwnPassword } from '#shared/domain/signin/signin.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { sessionCookie, sourceAddress } from '#shared/http/session.ts';
import type { SignedInAnswer } from '#shared/domain/auth/responses.ts';

/**
 * PUT /auth/password {current, password}: the signed-in person changes their own password (8 to 256
 * characters, not a common one, not the current one), proving the current one. Every session of the person ends; the answer sets a new
 * session cookie for this browser and gives its CSRF token.
 */
export const handler = httpHandler<{ current: string; password: string }, SignedInAnswer>(
  { auth: 'person', input: 'json', schema: changePasswordSchema },
  async (input, ctx) => {
    const signedIn = await changeOwnPassword(ctx.person!, { ...input, address: sourceAddress(ctx.event) });
    ctx.cookies.push(sessionCookie(ctx.event, signedIn.id, signInSettings().sessionMaxSeconds));
    return { person: signedIn.person, csrf_token: csrfToken(signedIn.id), expires_at: signedIn.expiresAt };
  },
);
