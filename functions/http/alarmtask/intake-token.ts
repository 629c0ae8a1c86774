import { issueIntakeToken } from '#shared/domain/alarms/intake.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { FixedSignSet, IntakeTokenSet } from '#shared/domain/alarms/responses.ts';
import { taskAuth } from '#shared/http/auth/task.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/intake-token.ts';

const schema = {
  type: 'object',
  properties: {
    revoke: { type: 'integer', enum: [0, 1] },
    fixed_sign: { type: 'integer', enum: [0, 1] },
  },
};

/**
 * PUT /alarmtask/intake: a new intake token for monitors that cannot sign (shown once), or revoke it;
 * or turn the original's fixed signature on or off (`fixed_sign`).
 */
export const handler = httpHandler<{ revoke?: number; fixed_sign?: number }, IntakeTokenSet | FixedSignSet>(
  { auth: taskAuth, input: jsonBody, schema, validate },
  (input, ctx) => issueIntakeToken(ctx.task!, input),
);
