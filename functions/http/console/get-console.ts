import { consoleResponse } from '#shared/console/serve.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { anyone } from '#shared/http/auth/public.ts';
import { noInput } from '#shared/http/input.ts';

/**
 * GET /console: the web console for the people on call, one self-contained HTML page (its script and
 * style inline, allowed by hash in a strict CSP). It signs every API call in the browser with the app
 * token entered at sign-in, kept in the tab's sessionStorage only.
 */
export const handler = httpHandler({ auth: anyone, input: noInput, rawResponse: true }, async () =>
  consoleResponse(),
);
