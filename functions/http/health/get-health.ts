import { config } from '#shared/config/env.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { anyone } from '#shared/http/auth/public.ts';
import { noInput } from '#shared/http/input.ts';

/** GET /health: the service is up. */
export interface Health {
  /** The deployed version. */
  version: string;
}

/** GET /health: no auth (API guide §15). */
export const handler = httpHandler<unknown, Health>(
  { auth: anyone, input: noInput, successMessage: 'ok' },
  async () => ({ version: config().serviceVersion }),
);
