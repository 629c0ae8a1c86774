import { issueIcalKey } from '#shared/domain/schedules/answers.ts';
import type { IcalKey } from '#shared/domain/schedules/responses.ts';
import { icalKeySchema } from '#shared/domain/schedules/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** PUT /schedule/ical {uid, id, revoke?}: a new calendar feed key (shown once), or none (`revoke`). */
export const handler = httpHandler<{ uid: number; id: number; revoke?: boolean }, IcalKey>(
  { auth: 'reader', grant: 'operate', input: 'json', schema: icalKeySchema },
  (input) => issueIcalKey(input),
);
