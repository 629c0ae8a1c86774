import { alarmStatsSchema } from '#shared/domain/reads/schemas.ts';
import { alarmStats } from '#shared/domain/reads/alarm-history.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { AlarmStats } from '#shared/domain/alarms/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/alarm-stats.ts';

/** GET /alarmtask/alarms/stats?uid=&task_id=[&from=&to=]: alarms per minute by level and outcome (default the last hour). */
export const handler = httpHandler<{ uid: number; task_id: number; from?: number; to?: number }, AlarmStats>(
  { auth: reader(), input: queryInput, schema: alarmStatsSchema, validate },
  (input) => alarmStats(input),
);
