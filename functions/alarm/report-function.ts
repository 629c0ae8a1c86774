import { dispatchRoutes } from '#shared/http/dispatch.ts';
import { handler as notFound } from '../http/not-found.ts';
import { handler as reportAlarm } from './report-alarm.ts';
import { handler as testAlarm } from './test-alarm.ts';

/** The Lambda of the `alarm-report` function group (infra/definitions.ts): report and test. */
export const handler = dispatchRoutes(
  {
    'POST /alarm/report': reportAlarm,
    'POST /alarm/test': testAlarm,
  },
  notFound,
);
