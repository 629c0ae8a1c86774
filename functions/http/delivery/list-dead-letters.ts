import { type ListDeadLettersInput, listDeadLetters } from '#shared/domain/deliveries/dlq.ts';
import { listDeadLettersSchema } from '#shared/domain/deliveries/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { DeadLetterList } from '#shared/domain/deliveries/responses.ts';

/** GET /delivery/dlq?uid&queue&task_id&limit: a dead-letter queue's messages, not consumed (role 9). */
export const handler = httpHandler<ListDeadLettersInput, DeadLetterList>(
  { auth: 'admin', input: 'query', schema: listDeadLettersSchema },
  (input) => listDeadLetters(input),
);
