import { showWorkflowSchema } from '#shared/domain/workflows/schemas.ts';
import { showWorkflow, showWorkflowFor } from '#shared/domain/workflows/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowShown } from '#shared/domain/workflows/responses.ts';
import { appOrPerson } from '#shared/http/auth/app-or-person.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/workflow/show-workflow.ts';

/**
 * GET /workflow/show?id= (API guide §10.4). A signed-in person (the console) sees it only when they
 * may read its task.
 */
export const handler = httpHandler<{ id: number }, WorkflowShown>(
  { auth: appOrPerson({ grant: 'read' }), input: queryInput, schema: showWorkflowSchema, validate },
  ({ id }, ctx) => (ctx.person ? showWorkflowFor(ctx.person.uid, id) : showWorkflow(id)),
);
