import type { ScheduleList } from '#shared/domain/schedules/responses.ts';
import { listSchedulesSchema } from '#shared/domain/schedules/schemas.ts';
import { listSchedules } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /schedule/list?uid=&limit=&cursor=: the schedules user `uid` may read (role 9: all), by name. */
export const handler = httpHandler<{ uid: number; limit?: number; cursor?: string }, ScheduleList>(
  { auth: 'reader', input: 'query', schema: listSchedulesSchema },
  (input) => listSchedules(input),
);
