import type { ScheduleShown } from '#shared/domain/schedules/responses.ts';
import { updateScheduleSchema } from '#shared/domain/schedules/schemas.ts';
import { updateSchedule } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/**
 * PUT /schedule/update {uid, id, effective_from?, ...the schedule}: the whole schedule again, taking
 * effect from now (or a later `effective_from`); answers about earlier instants never change.
 */
export const handler = httpHandler<Record<string, unknown>, ScheduleShown>(
  { auth: 'reader', grant: 'operate', input: 'json', schema: updateScheduleSchema },
  (input) => updateSchedule(input),
);
