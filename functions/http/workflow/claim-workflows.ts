import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowsOperated } from '#shared/domain/workflows/responses.ts';
import { appOrPerson } from '#shared/http/auth/app-or-person.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/workflow/claim-workflows.ts';

/** PUT /workflow/claim (API guide §10.2; claim: pending -> processing). */
export const handler = httpHandler<OperationInput, WorkflowsOperated>(
  {
    auth: appOrPerson({ grant: 'operate', actor: 'created_by' }),
    input: jsonBody,
    schema: operationSchemas.claim,
    validate,
  },
  (input) => operateWorkflows('claim', input),
);
