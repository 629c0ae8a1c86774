import { startReplaySchema } from '#shared/domain/replay/schemas.ts';
import { type ReplayInput, startReplay } from '#shared/domain/replay/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { ReplayAnswer } from '#shared/domain/replay/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/start-replay.ts';

/**
 * POST /alarmtask/replay {uid, task_id, config?, last? | from & to, scenario?, expect?}: what a
 * configuration would have done to the task's recorded alarms (API guide §13.7).
 */
export const handler = httpHandler<ReplayInput, ReplayAnswer>(
  { auth: reader(), input: jsonBody, schema: startReplaySchema, validate },
  (input) => startReplay(input),
);
