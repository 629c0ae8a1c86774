import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowsOperated } from '#shared/domain/workflows/responses.ts';

/** PUT /workflow/close (API guide §10.2; close: pending or processing -> closed). */
export const handler = httpHandler<OperationInput, WorkflowsOperated>(
  {
    auth: 'app|person',
    actor: 'created_by',
    grant: 'operate',
    input: 'json',
    schema: operationSchemas.close,
  },
  (input) => operateWorkflows('close', input),
);
