import { config } from '#shared/config/env.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /health: no auth (API guide §15). */
export const handler = httpHandler({ auth: 'none', input: 'none', successMessage: 'ok' }, async () => ({ version: config().serviceVersion }));
