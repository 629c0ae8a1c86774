import { pauseSchema } from '#shared/domain/tasks/schemas.ts';
import { pauseTask } from '#shared/domain/tasks/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { TaskPaused } from '#shared/domain/tasks/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/pause-task.ts';

/** PUT /alarmtask/pause: paused for `time` minutes (1..10080), then running again (API guide §5.9). */
export const handler = httpHandler<{ time: number }, TaskPaused>(
  { auth: taskAuth, input: jsonBody, schema: pauseSchema, validate },
  ({ time }, ctx) => pauseTask(ctx.task!, time),
);
