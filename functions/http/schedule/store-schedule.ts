import type { ScheduleShown } from '#shared/domain/schedules/responses.ts';
import { storeScheduleSchema } from '#shared/domain/schedules/schemas.ts';
import { storeSchedule } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/**
 * POST /schedule/store {uid, name, department_id, time_zone, layers, fallback?, coverage?, permission?}:
 * a new on-call schedule (the acting user gets rw); its first configuration answers for all time.
 */
export const handler = httpHandler<Record<string, unknown>, ScheduleShown>(
  { auth: 'reader', grant: 'operate', input: 'json', schema: storeScheduleSchema },
  (input) => storeSchedule(input),
);
