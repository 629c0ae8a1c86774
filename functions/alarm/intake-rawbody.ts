import { fromFalcon, fromRawBody } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/**
 * POST /alarm/rawbody and /alarm/arms: any text body; the alarm content is `{body}`. GET /alarm/rawbody
 * (no body): the query parameters but the credentials are the content, as /alarm/falcon takes them.
 */
export const handler = intakeHandler((req) => {
  const text = req.text();
  return text === '' ? fromFalcon(req.query) : fromRawBody(text);
}, true);
