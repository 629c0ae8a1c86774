import { claimByLink } from '#shared/domain/claims/service.ts';
import { claimAnswer, refuseForeignOrigin } from '#shared/http/claim-page.ts';
import { type HttpResult, httpHandler } from '#shared/http/handler.ts';
import { readCookie, SESSION_COOKIE, sourceAddress } from '#shared/http/session.ts';

/**
 * POST /claim {t, n}: claims a claim link's workflow (API guide §11.7), as the link's recipient or,
 * for a group robot's link, as the person signed in to the console (else to the sign-in and back). The
 * claim of PUT /workflow/claim: exactly one winner. `n` is the page nonce of a page served in the last
 * 10 to 20 minutes; an `Origin`, when sent, must be the service's own. An HTML page, or the envelope
 * with `Accept: application/json` (409 when someone else claimed it).
 */
export const handler = httpHandler<{ t?: unknown; n?: unknown }, HttpResult>(
  { auth: 'none', input: 'form-or-query', rawResponse: true },
  async (input, ctx) =>
    claimAnswer(ctx.event, input.t, async () => {
      refuseForeignOrigin(ctx.event);
      return claimByLink({
        token: input.t,
        pageNonce: input.n,
        address: sourceAddress(ctx.event),
        session: readCookie(ctx.event, SESSION_COOKIE),
      });
    }),
);
