import type { ScheduleDeleted } from '#shared/domain/schedules/responses.ts';
import { scheduleRefSchema } from '#shared/domain/schedules/schemas.ts';
import { deleteSchedule } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** DELETE /schedule (uid, id in a form body or the query): 409 while a task's receivers name it. */
export const handler = httpHandler<{ uid: number; id: number }, ScheduleDeleted>(
  { auth: 'reader', grant: 'operate', input: 'form-or-query', schema: scheduleRefSchema },
  (input) => deleteSchedule(input),
);
