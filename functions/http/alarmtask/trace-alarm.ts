import { alarmRefSchema } from '#shared/domain/reads/schemas.ts';
import type { AlarmRef } from '#shared/domain/reads/alarm-history.ts';
import { traceAlarm } from '#shared/domain/reads/alarm-trace.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { AlarmTrace } from '#shared/domain/alarms/responses.ts';

/** GET /alarmtask/alarm/trace?uid=&task_id=&uuid= (or &history_id=): why was or wasn't anyone notified. */
export const handler = httpHandler<AlarmRef, AlarmTrace>(
  { auth: 'reader', input: 'query', schema: alarmRefSchema },
  (input) => traceAlarm(input),
);
