import { MAX_OVERLAP_MINUTES, rotateCredentials } from '#shared/domain/tasks/credentials.ts';
import type { CredentialsRotated } from '#shared/domain/tasks/responses.ts';
import { httpHandler } from '#shared/http/handler.ts';

const schema = {
  type: 'object',
  properties: {
    token: { type: 'integer', enum: [0, 1], description: '1: a new task token.' },
    secret: { type: 'integer', enum: [0, 1], description: '1: a new task secret.' },
    overlap_minutes: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_OVERLAP_MINUTES,
      'x-message': `must be 0 to ${MAX_OVERLAP_MINUTES} minutes`,
      description: 'How long the old credentials stay valid (default 60; 0: they end at once).',
    },
  },
};

/**
 * PUT /alarmtask/credentials {token?: 1, secret?: 1, overlap_minutes?}: new task token and/or secret,
 * shown once; the old ones stay valid for the overlap.
 */
export const handler = httpHandler<
  { token?: 0 | 1; secret?: 0 | 1; overlap_minutes?: number },
  CredentialsRotated
>({ auth: 'app+task', input: 'json', schema }, (input, ctx) => rotateCredentials(ctx.task!, input));
