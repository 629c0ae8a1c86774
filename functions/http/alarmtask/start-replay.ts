import { startReplaySchema } from '#shared/domain/replay/schemas.ts';
import { type ReplayInput, startReplay } from '#shared/domain/replay/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { ReplayAnswer } from '#shared/domain/replay/responses.ts';

/**
 * POST /alarmtask/replay {uid, task_id, config?, last? | from & to, scenario?, expect?}: what a
 * configuration would have done to the task's recorded alarms (API guide §13.7).
 */
export const handler = httpHandler<ReplayInput, ReplayAnswer>(
  { auth: 'reader', input: 'json', schema: startReplaySchema },
  (input) => startReplay(input),
);
