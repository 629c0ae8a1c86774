import { updatePhone } from '#shared/domain/directory/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { UserUpdated } from '#shared/domain/directory/responses.ts';
import { appAuth } from '#shared/http/auth/app.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/user/update-phone.ts';

const schema = {
  type: 'object',
  required: ['uid', 'phone'],
  properties: {
    uid: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    phone: { type: 'string', pattern: '^1[3-9]\\d{9}$', 'x-message': 'must be a mainland mobile number' },
  },
};

/** PUT /user/updatephone: a mainland mobile number (API guide §4). */
export const handler = httpHandler<{ uid: number; phone: string }, UserUpdated>(
  { auth: appAuth, input: jsonBody, schema, validate },
  ({ uid, phone }) => updatePhone(uid, phone),
);
