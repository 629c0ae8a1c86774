import type { ScheduleShown } from '#shared/domain/schedules/responses.ts';
import { scheduleRefSchema } from '#shared/domain/schedules/schemas.ts';
import { showSchedule } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /schedule/show?uid=&id=: the schedule, its configuration in force now, its versions and overrides. */
export const handler = httpHandler<{ uid: number; id: number }, ScheduleShown>(
  { auth: 'reader', input: 'query', schema: scheduleRefSchema },
  (input) => showSchedule(input),
);
