import { issueIcalKey } from '#shared/domain/schedules/answers.ts';
import type { IcalKey } from '#shared/domain/schedules/responses.ts';
import { icalKeySchema } from '#shared/domain/schedules/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/schedule/ical-key.ts';

/** PUT /schedule/ical {uid, id, revoke?}: a new calendar feed key (shown once), or none (`revoke`). */
export const handler = httpHandler<{ uid: number; id: number; revoke?: boolean }, IcalKey>(
  { auth: reader({ grant: 'operate' }), input: jsonBody, schema: icalKeySchema, validate },
  (input) => issueIcalKey(input),
);
