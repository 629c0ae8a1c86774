import { fromRawBody } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/** POST /alarm/rawbody and /alarm/arms: any text body; the alarm content is `{body}`. */
export const handler = intakeHandler((req) => fromRawBody(req.text()), true);
