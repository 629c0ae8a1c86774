import { testAlarm } from '#shared/domain/alarms/report.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** POST /alarm/test (API guide §7.2): checks the alarm authentication only; nothing is queued. */
export const handler = httpHandler<Record<string, unknown>, unknown>(
  { auth: 'alarm', input: 'any-json', refusalsAsHttp200: true },
  (input) => testAlarm(input),
);
