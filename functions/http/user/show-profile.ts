import { userProfile } from '#shared/domain/tasks/access.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { UserProfile } from '#shared/domain/directory/responses.ts';
import { appAuth } from '#shared/http/auth/app.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/user/show-profile.ts';

const schema = {
  type: 'object',
  required: ['uid'],
  properties: { uid: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } },
};

/** GET /user/profile?uid= */
export const handler = httpHandler<{ uid: number }, UserProfile>(
  { auth: appAuth, input: queryInput, schema, validate },
  ({ uid }) => userProfile(uid),
);
