import { previewSchedule } from '#shared/domain/schedules/answers.ts';
import type { SchedulePreview } from '#shared/domain/schedules/responses.ts';
import { previewScheduleSchema } from '#shared/domain/schedules/schemas.ts';
import { httpHandler } from '#shared/http/handler.ts';

/**
 * POST /schedule/preview {uid, id?, effective_from?, from, to, time_zone, layers, ...}: the final
 * shifts an unsaved configuration would give, and what it changes against the saved one.
 */
export const handler = httpHandler<Record<string, unknown>, SchedulePreview>(
  { auth: 'reader', input: 'json', schema: previewScheduleSchema },
  (input) => previewSchedule(input),
);
