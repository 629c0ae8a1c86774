import { alarmRefSchema } from '#shared/domain/alarms/read-schemas.ts';
import { type AlarmRef, traceAlarm } from '#shared/domain/alarms/reads.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { AlarmTrace } from '#shared/domain/alarms/responses.ts';

/** GET /alarmtask/alarm/trace?uid=&task_id=&uuid= (or &history_id=): why was or wasn't anyone notified. */
export const handler = httpHandler<AlarmRef, AlarmTrace>(
  { auth: 'reader', input: 'query', schema: alarmRefSchema },
  (input) => traceAlarm(input),
);
