import { batchPerTurn } from '../../batch.ts';
import type { DueHandler } from '../due/runner.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import type { Effects } from '../webhooks/deliver-now.ts';
import { fireReminder } from './reminders.ts';
import { ANNOUNCE_KIND, REMIND_KIND, runAnnouncement } from './announce.ts';
import { defaultDeps, type WorkflowDeps } from './workflow-deps.ts';

/** The workflows the items of a due batch ask for in one turn, read in one BatchGetItem (consistent). */
const workflowsOfBatch = batchPerTurn(async (ids: number[]) => {
  const found = await defaultDeps.repo.getWorkflows(ids);
  return ids.map((id) => found.get(id));
});

/**
 * The workflows' deps for due work: workflows read together, the task through the container's cache
 * (a pause or stop reaches a reminder within TASK_CACHE_SECONDS), effects sent with the batch's.
 */
function dueDeps(effects?: Effects): WorkflowDeps {
  return {
    ...defaultDeps,
    getTask: (id: number) => getTaskCached(id),
    repo: { ...defaultDeps.repo, getWorkflow: (id: number) => workflowsOfBatch(id) },
    ...(effects ? { publishWebhookEvents: effects.publishEvents, publishJobs: effects.publishJobs } : {}),
  };
}

/** Due work of workflows: publish an operation's events (outbox) and fire reminders. */
export const workflowDueHandlers: Record<string, DueHandler> = {
  [ANNOUNCE_KIND]: async (item, _now, effects) => {
    await runAnnouncement(item, dueDeps(effects));
    return undefined;
  },
  [REMIND_KIND]: (item, now, effects) => fireReminder(item, now, dueDeps(effects)),
};
