import {
  type CountWorkflowsInput,
  countWorkflows,
  countWorkflowsSchema,
} from '#shared/domain/workflows/list.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowCountList } from '#shared/domain/workflows/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/workflow/count-workflows.ts';

/**
 * GET /workflow/counts?uid=&task_id= (or task_ids=1,2,3, up to 100): the workflows of each task by
 * status (pending, processing, done, closed) and their total, in the order asked.
 */
export const handler = httpHandler<CountWorkflowsInput, WorkflowCountList>(
  { auth: reader(), input: queryInput, schema: countWorkflowsSchema, validate },
  (input) => countWorkflows(input),
);
