import { fromJsonBody } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/** POST /alarm/jsonbody: the whole JSON body is the alarm content. */
export const handler = intakeHandler((req) => fromJsonBody(req.json()), true);
