import document from '#shared/generated/openapi.json' with { type: 'json' };
import { referenceResponse } from '#shared/http/docs.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { anyone } from '#shared/http/auth/public.ts';
import { noInput } from '#shared/http/input.ts';

/**
 * GET /docs: the API reference page, the OpenAPI document rendered as one self-contained HTML page (no
 * script, no external resource).
 */
export const handler = httpHandler({ auth: anyone, input: noInput, rawResponse: true }, async (_input, ctx) =>
  referenceResponse(document as Record<string, unknown>, ctx.event, '/docs'),
);
