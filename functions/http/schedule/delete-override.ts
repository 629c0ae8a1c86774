import type { OverrideEnded } from '#shared/domain/schedules/responses.ts';
import { deleteOverrideSchema } from '#shared/domain/schedules/schemas.ts';
import { deleteOverride } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { formOrQuery } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/schedule/delete-override.ts';

/**
 * DELETE /schedule/override (uid, id, override_id in a form body or the query): removed when it has
 * not started, else ended now.
 */
export const handler = httpHandler<{ uid: number; id: number; override_id: number }, OverrideEnded>(
  { auth: reader({ grant: 'operate' }), input: formOrQuery, schema: deleteOverrideSchema, validate },
  (input) => deleteOverride(input),
);
