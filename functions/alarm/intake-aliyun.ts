import { fromAliyun } from '#shared/domain/alarms/adapters.ts';
import { config } from '#shared/config/env.ts';
import { intakeHandler } from '#shared/http/intake.ts';

/** POST /alarm/aliyun: Alibaba Cloud CloudMonitor's alarm callback (a form body). */
export const handler = intakeHandler((req) => fromAliyun(req.form(), config().timeZone), true);
