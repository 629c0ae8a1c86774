import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowsOperated } from '#shared/domain/workflows/responses.ts';

/** PUT /workflow/processed (API guide §10.2; processed: processing -> done). */
export const handler = httpHandler<OperationInput, WorkflowsOperated>(
  {
    auth: 'app|person',
    actor: 'created_by',
    grant: 'operate',
    input: 'json',
    schema: operationSchemas.processed,
  },
  (input) => operateWorkflows('processed', input),
);
