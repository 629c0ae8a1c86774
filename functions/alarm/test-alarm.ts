import { testAlarm } from '#shared/domain/alarms/report.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { NoData } from '#shared/domain/responses.ts';

/** POST /alarm/test (API guide §7.2): checks the alarm authentication only; nothing is queued. */
export const handler = httpHandler<Record<string, unknown>, NoData>(
  { auth: 'alarm', input: 'any-json', refusalsAsHttp200: true },
  (input) => testAlarm(input),
);
