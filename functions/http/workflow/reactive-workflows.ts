import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** PUT /workflow/reactive (API guide §10.2; reactive: closed -> pending). */
export const handler = httpHandler<OperationInput, unknown>(
  { auth: 'app|person', actor: 'created_by', input: 'json', schema: operationSchemas.reactive },
  (input) => operateWorkflows('reactive', input),
);
