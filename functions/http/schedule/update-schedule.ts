import type { ScheduleShown } from '#shared/domain/schedules/responses.ts';
import { updateScheduleSchema } from '#shared/domain/schedules/schemas.ts';
import { updateSchedule } from '#shared/domain/schedules/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/schedule/update-schedule.ts';

/**
 * PUT /schedule/update {uid, id, effective_from?, ...the schedule}: the whole schedule again, taking
 * effect from now (or a later `effective_from`); answers about earlier instants never change.
 */
export const handler = httpHandler<Record<string, unknown>, ScheduleShown>(
  { auth: reader({ grant: 'operate' }), input: jsonBody, schema: updateScheduleSchema, validate },
  (input) => updateSchedule(input),
);
