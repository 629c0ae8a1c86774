import {
  type ListWorkflowsInput,
  listWorkflows,
  listWorkflowsSchema,
} from '#shared/domain/workflows/list.ts';
import { httpHandler } from '#shared/http/handler.ts';

/** GET /workflow/list?uid=&task_id=&status=&claimer=&assignee=&from=&to=&limit=&cursor= (issue 10). */
export const handler = httpHandler<ListWorkflowsInput, unknown>(
  { auth: 'app', input: 'query', schema: listWorkflowsSchema },
  (input) => listWorkflows(input),
);
