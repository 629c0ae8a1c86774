import { listAlarmsSchema } from '#shared/domain/reads/schemas.ts';
import { type HistoryQuery, listAlarms } from '#shared/domain/reads/alarm-history.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { AlarmList } from '#shared/domain/alarms/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/list-alarms.ts';

/** GET /alarmtask/alarms?uid=&task_id=[&from=&to=&level=&outcome=&metric=&batch=&limit=&cursor=]: a task's alarm history, newest first. */
export const handler = httpHandler<HistoryQuery, AlarmList>(
  { auth: reader(), input: queryInput, schema: listAlarmsSchema, validate },
  (input) => listAlarms(input),
);
