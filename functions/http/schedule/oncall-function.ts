import { dispatchRoutes } from '#shared/http/dispatch.ts';
import { handler as taskOncall } from '../alarmtask/oncall-task.ts';
import { handler as notFound } from '../not-found.ts';
import { handler as addOverride } from './add-override.ts';
import { handler as deleteOverride } from './delete-override.ts';
import { handler as deleteSchedule } from './delete-schedule.ts';
import { handler as icalFeed } from './ical-feed.ts';
import { handler as icalKey } from './ical-key.ts';
import { handler as listSchedules } from './list-schedules.ts';
import { handler as previewSchedule } from './preview-schedule.ts';
import { handler as showFinal } from './show-final.ts';
import { handler as showOncall } from './show-oncall.ts';
import { handler as showSchedule } from './show-schedule.ts';
import { handler as storeSchedule } from './store-schedule.ts';
import { handler as updateSchedule } from './update-schedule.ts';

/** The Lambda of the `oncall` function group (infra/definitions.ts): the schedule routes. */
export const handler = dispatchRoutes(
  {
    'POST /schedule/store': storeSchedule,
    'GET /schedule/show': showSchedule,
    'PUT /schedule/update': updateSchedule,
    'DELETE /schedule': deleteSchedule,
    'GET /schedule/list': listSchedules,
    'POST /schedule/override': addOverride,
    'DELETE /schedule/override': deleteOverride,
    'GET /schedule/oncall': showOncall,
    'GET /schedule/final': showFinal,
    'POST /schedule/preview': previewSchedule,
    'PUT /schedule/ical': icalKey,
    'GET /schedule/ical.ics': icalFeed,
    'GET /alarmtask/oncall': taskOncall,
  },
  notFound,
);
