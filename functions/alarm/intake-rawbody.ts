import { fromRawBody, fromRawQuery } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/**
 * POST /alarm/rawbody and /alarm/arms: any text body; the alarm content is `{body}`. GET /alarm/rawbody:
 * no body, so `{body: ""}`, with the query parameters but the credentials added to it.
 */
export const handler = intakeHandler(
  (req) => (req.method === 'GET' ? fromRawQuery(req.query) : fromRawBody(req.text())),
  true,
);
