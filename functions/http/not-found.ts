import { NotFoundError } from '#shared/domain/errors.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { anyone } from '#shared/http/auth/public.ts';
import { noInput } from '#shared/http/input.ts';

/** The API's `$default` route: every unknown method/path gets a 404 envelope. */
export const handler = httpHandler({ auth: anyone, input: noInput }, async (_input, ctx) => {
  throw new NotFoundError(`route [${ctx.event.requestContext.http.method} ${ctx.event.rawPath}] not found`);
});
