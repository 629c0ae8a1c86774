import {
  type ListWorkflowsInput,
  listWorkflows,
  listWorkflowsSchema,
} from '#shared/domain/workflows/list.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WorkflowList } from '#shared/domain/workflows/responses.ts';

/**
 * GET /workflow/list?uid=&task_id=&status=&claimer=&assignee=&from=&to=&limit=&cursor=: a task's
 * workflows newest first, by status, claimer, assignee and creation time (Unix seconds, both ends
 * included); each as /workflow/show gives it without its pipeline records, with its claimer and
 * assignees. Follow `next_cursor` until it is empty (a page may hold fewer than `limit` workflows).
 */
export const handler = httpHandler<ListWorkflowsInput, WorkflowList>(
  { auth: 'reader', input: 'query', schema: listWorkflowsSchema },
  (input) => listWorkflows(input),
);
