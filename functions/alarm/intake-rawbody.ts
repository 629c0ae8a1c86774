import { fromFalcon, fromRawBody } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/**
 * POST /alarm/rawbody and /alarm/arms: any text body; the alarm content is `{body}`. GET /alarm/rawbody:
 * the query parameters but the credentials are the content, as /alarm/falcon takes them.
 */
export const handler = intakeHandler(
  (req) => (req.method === 'GET' ? fromFalcon(req.query) : fromRawBody(req.text())),
  true,
);
