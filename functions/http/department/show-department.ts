import { showDepartment } from '#shared/domain/directory/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { DepartmentShown } from '#shared/domain/directory/responses.ts';
import { appAuth } from '#shared/http/auth/app.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/department/show-department.ts';

const schema = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } },
};

/** GET /department/show?id= */
export const handler = httpHandler<{ id: number }, DepartmentShown>(
  { auth: appAuth, input: queryInput, schema, validate },
  ({ id }) => showDepartment(id),
);
