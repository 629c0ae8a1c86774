import document from '#shared/generated/openapi.json' with { type: 'json' };
import { referenceResponse } from '#shared/http/docs.ts';
import { httpHandler } from '#shared/http/handler.ts';

/**
 * GET /docs: the API reference page, the OpenAPI document rendered as one self-contained HTML page (no
 * script, no external resource).
 */
export const handler = httpHandler({ auth: 'none', input: 'none', rawResponse: true }, async (_input, ctx) =>
  referenceResponse(document as Record<string, unknown>, ctx.event, '/docs'),
);
