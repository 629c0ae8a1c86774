import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** PUT /workflow/claim (behavior 9; claim: pending -> processing). */
export const handler = httpHandler<OperationInput, unknown>(
  { auth: 'app|person', actor: 'created_by', input: 'json', schema: operationSchemas.claim },
  (input) => operateWorkflows('claim', input),
);
