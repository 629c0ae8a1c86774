import { showReplaySchema } from '#shared/domain/replay/schemas.ts';
import { showReplay } from '#shared/domain/replay/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { ReplayAnswer } from '#shared/domain/replay/responses.ts';

/** GET /alarmtask/replay?uid=&replay_id=: a replay, running, failed or done (API guide §13.7). */
export const handler = httpHandler<{ uid: number; replay_id: string }, ReplayAnswer>(
  { auth: 'reader', input: 'query', schema: showReplaySchema },
  (input) => showReplay(input),
);
