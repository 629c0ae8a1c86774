import { finalShifts } from '#shared/domain/schedules/answers.ts';
import type { FinalShifts } from '#shared/domain/schedules/responses.ts';
import { finalQuerySchema } from '#shared/domain/schedules/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /schedule/final?uid=&id=&from=&to=: the final shifts of a window of at most 90 days, its gaps. */
export const handler = httpHandler<{ uid: number; id: number; from: number; to: number }, FinalShifts>(
  { auth: 'reader', input: 'query', schema: finalQuerySchema },
  (input) => finalShifts(input),
);
