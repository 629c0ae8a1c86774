import { configureHeartbeat, type HeartbeatSetting } from '#shared/domain/alarms/heartbeat.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { HeartbeatSet } from '#shared/domain/alarms/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/heartbeat-task.ts';

const schema = {
  type: 'object',
  required: ['interval'],
  properties: {
    interval: {
      type: 'integer',
      minimum: 0,
      maximum: 10_080,
      'x-message': 'must be 0 to 10080 minutes',
    },
    level: { type: 'integer', enum: [0, 1, 2, 3] },
  },
};

/** PUT /alarmtask/heartbeat: expect an alarm or ping every `interval` minutes (0 turns it off). */
export const handler = httpHandler<HeartbeatSetting, HeartbeatSet>(
  { auth: taskAuth, input: jsonBody, schema, validate },
  (input, ctx) => configureHeartbeat(ctx.task!, input),
);
