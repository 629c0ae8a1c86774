import { reportAlarm } from '#shared/domain/alarms/report.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { ReportAnswer } from '#shared/domain/alarms/report.ts';

/**
 * POST /alarm/report (API guide §7.1): authenticated with the task token in the body (taskid,
 * timestamp, sign); the alarm is durably queued and processed asynchronously.
 */
export const handler = httpHandler<Record<string, unknown>, ReportAnswer>(
  { auth: 'alarm', input: 'any-json', refusalsAsHttp200: true },
  (input) => reportAlarm(input),
);
