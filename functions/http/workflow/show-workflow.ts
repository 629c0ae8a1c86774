import { showWorkflowSchema } from '#shared/domain/workflows/schemas.ts';
import { showWorkflow, showWorkflowFor } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowShown } from '#shared/domain/workflows/responses.ts';

/**
 * GET /workflow/show?id= (API guide §10.4). A signed-in person (the console) sees it only when they
 * may read its task.
 */
export const handler = httpHandler<{ id: number }, WorkflowShown>(
  { auth: 'app|person', grant: 'read', input: 'query', schema: showWorkflowSchema },
  ({ id }, ctx) => (ctx.person ? showWorkflowFor(ctx.person.uid, id) : showWorkflow(id)),
);
