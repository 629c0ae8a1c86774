import { signOutSchema } from '#shared/domain/auth/schemas.ts';
import { deleteSession } from '#shared/domain/auth/sessions.ts';
import { signOutPersonEverywhere } from '#shared/domain/signin/signin.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { clearedCookie, SESSION_COOKIE } from '#shared/http/session.ts';
import type { NoData } from '#shared/domain/responses.ts';
import { personAuth } from '#shared/http/auth/person.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/auth/sign-out.ts';

/**
 * POST /auth/signout {everywhere?: 1}: ends this session (the cookie is cleared), or with
 * `everywhere` every session of the person, in every browser.
 */
export const handler = httpHandler<{ everywhere?: 0 | 1 }, NoData>(
  { auth: personAuth, input: jsonBody, schema: signOutSchema, validate },
  async (input, ctx) => {
    const { person, session } = ctx as Required<typeof ctx>;
    if (input.everywhere === 1) await signOutPersonEverywhere(person.uid);
    await deleteSession(session.hash);
    ctx.cookies.push(clearedCookie(ctx.event, SESSION_COOKIE));
    return {};
  },
);
