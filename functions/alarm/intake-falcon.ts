import { fromFalcon } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/**
 * GET /alarm/falcon: Open-Falcon's callback; the query parameters (and, posted, the form fields) are
 * the alarm content.
 */
export const handler = intakeHandler(
  (req) => fromFalcon({ ...(req.text() === '' ? {} : req.form()), ...req.query }),
  true,
);
