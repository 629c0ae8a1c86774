import { showClaimLink } from '#shared/domain/claims/service.ts';
import { claimAnswer } from '#shared/http/claim-page.ts';
import { type HttpResult, httpHandler } from '#shared/http/handler.ts';
import { readCookie, SESSION_COOKIE, sourceAddress } from '#shared/http/session.ts';

/**
 * GET /claim?t=<token> (and HEAD): the page of a claim link (API guide §11.7): the workflow, its
 * status and a button to claim it, or why the link no longer claims. Changes nothing, whoever asks
 * (link scanners and previews open every link). An HTML page, or the envelope with
 * `Accept: application/json`.
 */
export const handler = httpHandler<{ t?: unknown }, HttpResult>(
  { auth: 'none', input: 'query', rawResponse: true },
  async (input, ctx) =>
    claimAnswer(ctx.event, input.t, () =>
      showClaimLink({
        token: input.t,
        address: sourceAddress(ctx.event),
        session: readCookie(ctx.event, SESSION_COOKIE),
      }),
    ),
);
