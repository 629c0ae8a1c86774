import { type ListDeadLettersInput, listDeadLetters } from '#shared/domain/deliveries/dlq.ts';
import { listDeadLettersSchema } from '#shared/domain/deliveries/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { DeadLetterList } from '#shared/domain/deliveries/responses.ts';
import { adminAuth } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/delivery/list-dead-letters.ts';

/** GET /delivery/dlq?uid&queue&task_id&limit: a dead-letter queue's messages, not consumed (role 9). */
export const handler = httpHandler<ListDeadLettersInput, DeadLetterList>(
  { auth: adminAuth, input: queryInput, schema: listDeadLettersSchema, validate },
  (input) => listDeadLetters(input),
);
