import { listAlarmsSchema } from '#shared/domain/reads/schemas.ts';
import { type HistoryQuery, listAlarms } from '#shared/domain/reads/alarm-history.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { AlarmList } from '#shared/domain/alarms/responses.ts';

/** GET /alarmtask/alarms?uid=&task_id=[&from=&to=&level=&outcome=&metric=&batch=&limit=&cursor=]: a task's alarm history, newest first. */
export const handler = httpHandler<HistoryQuery, AlarmList>(
  { auth: 'reader', input: 'query', schema: listAlarmsSchema },
  (input) => listAlarms(input),
);
