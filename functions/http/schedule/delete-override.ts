import type { OverrideEnded } from '#shared/domain/schedules/responses.ts';
import { deleteOverrideSchema } from '#shared/domain/schedules/schemas.ts';
import { deleteOverride } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/**
 * DELETE /schedule/override (uid, id, override_id in a form body or the query): removed when it has
 * not started, else ended now.
 */
export const handler = httpHandler<{ uid: number; id: number; override_id: number }, OverrideEnded>(
  { auth: 'reader', grant: 'operate', input: 'form-or-query', schema: deleteOverrideSchema },
  (input) => deleteOverride(input),
);
