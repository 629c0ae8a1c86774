import { alarmRefSchema } from '#shared/domain/reads/schemas.ts';
import type { AlarmRef } from '#shared/domain/reads/alarm-history.ts';
import { traceAlarm } from '#shared/domain/reads/alarm-trace.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { AlarmTrace } from '#shared/domain/alarms/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/trace-alarm.ts';

/** GET /alarmtask/alarm/trace?uid=&task_id=&uuid= (or &history_id=): why was or wasn't anyone notified. */
export const handler = httpHandler<AlarmRef, AlarmTrace>(
  { auth: reader(), input: queryInput, schema: alarmRefSchema, validate },
  (input) => traceAlarm(input),
);
