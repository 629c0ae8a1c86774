import { alarmRefSchema } from '#shared/domain/reads/schemas.ts';
import { type AlarmRef, showAlarm } from '#shared/domain/reads/alarm-history.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { AlarmShown } from '#shared/domain/alarms/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/show-alarm.ts';

/** GET /alarmtask/alarm?uid=&task_id=&uuid= (or &history_id=[&from=&to=]): one processed alarm. */
export const handler = httpHandler<AlarmRef, AlarmShown>(
  { auth: reader(), input: queryInput, schema: alarmRefSchema, validate },
  (input) => showAlarm(input),
);
