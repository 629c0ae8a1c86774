import { reportAlarm } from '#shared/domain/alarms/report.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { ReportAnswer } from '#shared/domain/alarms/report.ts';
import { alarmSender } from '#shared/http/auth/alarm.ts';
import { anyJsonBody } from '#shared/http/input.ts';

/**
 * POST /alarm/report (API guide §7.1): authenticated with the task token in the body (taskid,
 * timestamp, sign); the alarm is durably queued and processed asynchronously.
 */
export const handler = httpHandler<Record<string, unknown>, ReportAnswer>(
  { auth: alarmSender, input: anyJsonBody, refusalsAsHttp200: true },
  (input) => reportAlarm(input),
);
