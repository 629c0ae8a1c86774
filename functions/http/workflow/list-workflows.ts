import {
  type ListWorkflowsInput,
  listWorkflows,
  listWorkflowsSchema,
} from '#shared/domain/workflows/list.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowList } from '#shared/domain/workflows/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { queryInput } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/workflow/list-workflows.ts';

/**
 * GET /workflow/list?uid=&task_id=&status=&claimer=&assignee=&from=&to=&limit=&cursor=: a task's
 * workflows newest first, by status, claimer, assignee and creation time (Unix seconds, both ends
 * included); each as /workflow/show gives it without its pipeline records, with its claimer and
 * assignees. Follow `next_cursor` until it is empty (a page may hold fewer than `limit` workflows).
 */
export const handler = httpHandler<ListWorkflowsInput, WorkflowList>(
  { auth: reader(), input: queryInput, schema: listWorkflowsSchema, validate },
  (input) => listWorkflows(input),
);
