import type { NotifyScene, RenderContext, WebhookBody } from '../../contracts/messages.ts';
import { type Person, person, type User } from '../directory/model.ts';
import { event, historyRef, orderRef, pipelineRef, taskRef, workflowRef } from '../events/payloads.ts';
import type { PipelineRecord, Workflow, WorkflowStatus } from './model.ts';
import type { WorkflowDetail, WorkflowsOperated } from './responses.ts';

/** Person view of a uid: null for 0 (the application / system); blanks for a user no longer known. */
export function personOf(uid: number, users: Map<number, User>): Person | null {
  if (!uid) return null;
  const u = users.get(uid);
  return u ? person(u) : { uid, username: '', user: '', email: '', department: '' };
}

/** Pipeline records in the order they happened. */
export function orderedPipelines(pipelines: PipelineRecord[]): PipelineRecord[] {
  return [...pipelines].sort(
    (a, b) => a.created_at - b.created_at || (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0),
  );
}

/** GET /workflow/show: API guide §10.4. */
export function workflowView(input: {
  workflow: Workflow;
  pipelines: PipelineRecord[];
  users: Map<number, User>;
  task: { id: number; name: string; department_id: number };
  department: { id: number; name: string };
}): WorkflowDetail {
  const { workflow: w, pipelines, users, task, department } = input;
  const h = w.history;
  return {
    id: w.id,
    task_id: w.task_id,
    metric: w.metric,
    history_id: w.history_id,
    status: w.status,
    created_at: w.created_at,
    updated_at: w.updated_at,
    pipelines: orderedPipelines(pipelines).map((p) => ({
      status: p.status,
      remark: p.remark,
      props: p.props ?? {},
      created_by: p.created_by,
      created_at: p.created_at,
      creator: personOf(p.created_by, users),
    })),
    task: { id: task.id, name: task.name, department_id: task.department_id, department },
    history: {
      id: h.id,
      uuid: h.uuid,
      batch: h.batch,
      metric: h.metric,
      notice_time: h.notice_time,
      level: h.level,
      ctn: JSON.stringify(h.ctn),
      created_at: h.created_at,
    },
  };
}

/** Scenes of workflow events and notifications (API guide §11.2, §12.4). */
export type WorkflowScene = Exclude<NotifyScene, 'compressed' | 'not_compress' | 'upgrade' | 'recovery'>;

const OPERATION_SCENES = new Set<WorkflowScene>(['claim', 'assign', 'processed', 'reactive', 'close']);

/** The payload parts of one workflow event (webhook `data` and the template render context). */
export function workflowEventData(input: {
  scene: WorkflowScene;
  task: { id: number; name: string };
  workflow: Pick<Workflow, 'id' | 'created_at' | 'history'>;
  status: WorkflowStatus;
  pipeline: PipelineRecord;
  users: Map<number, User>;
}) {
  const { scene, task, workflow, status, pipeline, users } = input;
  const data: Record<string, unknown> = {
    task: taskRef(task),
    history: historyRef(workflow.history),
    workflow: workflowRef({ id: workflow.id, status, created_at: workflow.created_at }),
  };
  if (OPERATION_SCENES.has(scene)) {
    data.pipeline = pipelineRef({
      remark: pipeline.remark,
      user: personOf(pipeline.created_by, users),
      ...(scene === 'assign' ? { assignto: pipeline.props.assignto ?? [] } : {}),
      ...(pipeline.props.link ? { link: pipeline.props.link } : {}),
    });
  }
  // The workflow's event sequence (none for a record written before it was counted).
  if (pipeline.seq !== undefined) data.order = orderRef(`wf:${workflow.id}`, pipeline.seq);
  return data;
}

export function workflowEvent(scene: WorkflowScene, data: Record<string, unknown>): WebhookBody {
  return event('WORKFLOW', scene, data);
}

export function renderContext(
  task: { id: number; name: string },
  data: Record<string, unknown>,
): RenderContext {
  return {
    task: taskRef(task),
    history: data.history as Record<string, unknown>,
    workflow: data.workflow as Record<string, unknown>,
    ...(data.pipeline ? { pipeline: data.pipeline as Record<string, unknown> } : {}),
  };
}

/** Deterministic id of the event (and base of the notification job ids) of one pipeline record. */
export const eventIdOf = (p: Pick<PipelineRecord, 'workflow_id' | 'sk'>) => `wf:${p.workflow_id}:${p.sk}`;

/** Response of the batch operations. */
export const operationResultView = (
  workflows: { id: number; status: WorkflowStatus }[],
): WorkflowsOperated => ({
  workflows: workflows.map((w) => ({ id: w.id, status: w.status })),
});
