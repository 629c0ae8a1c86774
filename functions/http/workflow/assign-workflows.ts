import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowsOperated } from '#shared/domain/workflows/responses.ts';
import { appOrPerson } from '#shared/http/auth/app-or-person.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/workflow/assign-workflows.ts';

/** PUT /workflow/assign (API guide §10.2; assign: pending or processing, status unchanged). */
export const handler = httpHandler<OperationInput, WorkflowsOperated>(
  {
    auth: appOrPerson({ grant: 'operate', actor: 'created_by' }),
    input: jsonBody,
    schema: operationSchemas.assign,
    validate,
  },
  (input) => operateWorkflows('assign', input),
);
