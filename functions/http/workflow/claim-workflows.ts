import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** PUT /workflow/claim (API guide §10.2; claim: pending -> processing). */
export const handler = httpHandler<OperationInput, unknown>(
  { auth: 'app|person', actor: 'created_by', input: 'json', schema: operationSchemas.claim },
  (input) => operateWorkflows('claim', input),
);
