import { type RedriveInput, redriveDeadLetters } from '#shared/domain/deliveries/dlq.ts';
import { redriveSchema } from '#shared/domain/deliveries/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { Redriven } from '#shared/domain/deliveries/responses.ts';

/** POST /delivery/dlq/redrive {uid, queue, message_id | all: 1, task_id?}: dead letters back to their queue (role 9). */
export const handler = httpHandler<RedriveInput, Redriven>(
  { auth: 'admin', input: 'json', schema: redriveSchema },
  (input) => redriveDeadLetters(input),
);
