import { showWorkflowSchema } from '#shared/domain/workflows/schemas.ts';
import { showWorkflow } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /workflow/show?id= (interface 2.13). */
export const handler = httpHandler<{ id: number }, unknown>(
  { auth: 'app', input: 'query', schema: showWorkflowSchema },
  ({ id }) => showWorkflow(id),
);
