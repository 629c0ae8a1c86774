import { testAlarm } from '#shared/domain/alarms/report.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { NoData } from '#shared/domain/responses.ts';
import { alarmSender } from '#shared/http/auth/alarm.ts';
import { anyJsonBody } from '#shared/http/input.ts';

/** POST /alarm/test (API guide §7.2): checks the alarm authentication only; nothing is queued. */
export const handler = httpHandler<Record<string, unknown>, NoData>(
  { auth: alarmSender, input: anyJsonBody, refusalsAsHttp200: true },
  (input) => testAlarm(input),
);
