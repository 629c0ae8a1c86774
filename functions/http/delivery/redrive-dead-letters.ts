import { type RedriveInput, redriveDeadLetters } from '#shared/domain/deliveries/dlq.ts';
import { redriveSchema } from '#shared/domain/deliveries/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { Redriven } from '#shared/domain/deliveries/responses.ts';
import { adminAuth } from '#shared/http/auth/reader.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/delivery/redrive-dead-letters.ts';

/** POST /delivery/dlq/redrive {uid, queue, message_id | all: 1, task_id?}: dead letters back to their queue (role 9). */
export const handler = httpHandler<RedriveInput, Redriven>(
  { auth: adminAuth, input: jsonBody, schema: redriveSchema, validate },
  (input) => redriveDeadLetters(input),
);
