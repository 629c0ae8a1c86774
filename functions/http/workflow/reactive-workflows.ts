import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowsOperated } from '#shared/domain/workflows/responses.ts';

/** PUT /workflow/reactive (API guide §10.2; reactive: closed -> pending). */
export const handler = httpHandler<OperationInput, WorkflowsOperated>(
  {
    auth: 'app|person',
    actor: 'created_by',
    grant: 'operate',
    input: 'json',
    schema: operationSchemas.reactive,
  },
  (input) => operateWorkflows('reactive', input),
);
