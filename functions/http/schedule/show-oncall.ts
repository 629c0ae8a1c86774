import { oncallAt } from '#shared/domain/schedules/answers.ts';
import type { OncallNow } from '#shared/domain/schedules/responses.ts';
import { oncallQuerySchema } from '#shared/domain/schedules/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /schedule/oncall?uid=&id=&at=: who is on call at `at` (default now), why, and the shift. */
export const handler = httpHandler<{ uid: number; id: number; at?: number }, OncallNow>(
  { auth: 'reader', input: 'query', schema: oncallQuerySchema },
  (input) => oncallAt(input),
);
