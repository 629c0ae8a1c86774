import { randomInt, randomUUID } from 'node:crypto';
import { advanceClock as moveLocalClock, nowSeconds } from '../../shared/clock.ts';
import type { HistoryRecord } from '../../shared/domain/alarms/history.ts';
import type { Task } from '../../shared/domain/tasks/model.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import { createWorkflow } from '../../shared/domain/workflows/service.ts';
import { defaultDeps, type WorkflowDeps } from '../../shared/domain/workflows/workflow-deps.ts';
import { api, serviceNow } from './client.ts';
import { type CreatedTask, createTask, type TaskBody } from './tasks.ts';

/**
 * Workflows in tests. The pipeline creates workflows in the service; tests call `createWorkflow`
 * directly from the worker (it has the stack's environment). The worker's clock is first moved to the
 * service's clock (other suites may have advanced it), so created_at and reminder due times agree.
 */
export async function syncClock(): Promise<number> {
  const now = await serviceNow();
  const behind = now - nowSeconds();
  if (behind > 0) moveLocalClock(behind);
  return now;
}

/** A task with the workflow switch on and the given reminders; receivers and other fields overridable. */
export async function createWorkflowTask(
  reminds: unknown[] = [],
  overrides: TaskBody = {},
): Promise<CreatedTask> {
  return createTask({ workflow: { enable: true, reminds }, ...overrides });
}

export async function loadTask(id: number): Promise<Task> {
  const task = await getTask(id, true);
  if (!task) throw new Error(`task ${id} not found`);
  return task;
}

/** A stored alarm as the pipeline hands it over. */
export function historyOf(task: { id: number }, overrides: Partial<HistoryRecord> = {}): HistoryRecord {
  const now = nowSeconds();
  return {
    id: randomInt(1, 2 ** 40),
    uuid: randomUUID(),
    task_id: task.id,
    batch: randomInt(1, 1_000_000),
    metric: randomUUID().replace(/-/g, '').padEnd(40, '0').slice(0, 40),
    level: 2,
    ctn: { hostname: 'web-1', error: 'disk full', n: 3 },
    notice_time: now - 5,
    created_at: now - 1,
    ...overrides,
  };
}

/** Creates a pending workflow for a task (as the pipeline would). */
export async function newWorkflow(
  task: { id: number },
  history: Partial<HistoryRecord> = {},
  deps: WorkflowDeps = defaultDeps,
): Promise<{ id: number; created: boolean; history: HistoryRecord }> {
  await syncClock();
  const full = await loadTask(task.id);
  const h = historyOf(task, history);
  const out = await createWorkflow({ task: full, history: h }, deps);
  return { ...out, history: h };
}

// biome-ignore lint/suspicious/noExplicitAny: the show view under test
export async function showWorkflow(id: number): Promise<any> {
  const res = await api.get('/workflow/show', { query: { id } });
  if (res.code !== 0) throw new Error(`show workflow ${id}: ${res.status} ${res.msg}`);
  return res.data.workflow;
}

/** The statuses of a workflow's pipeline records, in order. */
export async function pipelineStatuses(id: number): Promise<number[]> {
  // biome-ignore lint/suspicious/noExplicitAny: the show view under test
  return (await showWorkflow(id)).pipelines.map((p: any) => p.status);
}

export const operate = (op: string, body: Record<string, unknown>) => api.put(`/workflow/${op}`, body);
