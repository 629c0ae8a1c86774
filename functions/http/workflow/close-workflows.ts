import { type OperationInput, operationSchemas } from '#shared/domain/workflows/schemas.ts';
import { operateWorkflows } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** PUT /workflow/close (API guide §10.2; close: pending or processing -> closed). */
export const handler = httpHandler<OperationInput, unknown>(
  { auth: 'app|person', actor: 'created_by', input: 'json', schema: operationSchemas.close },
  (input) => operateWorkflows('close', input),
);
