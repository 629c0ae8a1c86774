import { fromAlertmanager } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/** POST /alarm/alertmanager: Prometheus Alertmanager's webhook (v4); a resolved alert is a recovery. */
export const handler = intakeHandler((req) => fromAlertmanager(req.json()));
