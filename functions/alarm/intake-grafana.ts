import { fromGrafana } from '#shared/domain/alarms/adapters.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/** POST /alarm/grafana: Grafana's alerting webhook, or the original's DingDing-notifier body. */
export const handler = intakeHandler((req) => fromGrafana(req.json()));
