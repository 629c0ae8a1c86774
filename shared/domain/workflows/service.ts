import { keys } from '../../db/keys.ts';
import type { HistoryRecord } from '../alarms/history.ts';
import { ROLE_SUPER_ADMIN, type User } from '../directory/model.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { requireReadOf } from '../tasks/access.ts';
import type { Task } from '../tasks/model.ts';
import type { NotifyChannel } from '../tasks/templates.ts';
import {
  isOpen,
  nextSeq,
  type Operation,
  ownershipAfter,
  type PipelineRecord,
  refusal,
  repeated,
  staleRound,
  transition,
  WF_DONE,
  WF_PENDING,
  type Workflow,
} from './model.ts';
import { announcement, announceNow, countMoves } from './announce.ts';
import { defaultDeps, type WorkflowDeps } from './workflow-deps.ts';
import type { WorkflowShown, WorkflowsOperated } from './responses.ts';
import type { OperationInput } from './schemas.ts';
import { operationResultView, workflowView } from './views.ts';

// ---- Create / finish (called by the alarm pipeline) -------------------------------------------

/**
 * Creates the pending workflow of an alarm (API guide §9.6): idempotent per alarm uuid (a redelivered
 * alarm returns the first workflow with `created: false`). The workflow, its first pipeline record,
 * the alarm guard and the announcement (outbox) are written in one transaction; the `generated`
 * event, its notifications and the pending reminders follow from the announcement, at once or, if
 * that fails, from the next scheduled run.
 */
export async function createWorkflow(
  input: { task: Task; history: HistoryRecord },
  deps: WorkflowDeps = defaultDeps,
): Promise<{ id: number; created: boolean }> {
  const { task, history } = input;
  const existing = await deps.repo.getWorkflowIdOfAlarm(task.id, history.uuid);
  if (existing !== undefined) return { id: existing, created: false };

  const id = await deps.repo.allocateWorkflowId();
  const now = deps.now();
  const workflow: Workflow = {
    id,
    task_id: task.id,
    metric: history.metric,
    history_id: history.id,
    status: WF_PENDING,
    created_at: now,
    updated_at: now,
    version: 1,
    epoch: 1,
    seq: 1,
    task_name: task.name,
    department_id: task.department_id,
    history,
    counted: true,
  };
  const pipeline = pipelineRecord(workflow, { status: WF_PENDING, remark: '', created_by: 0, now });
  const outbox = announcement('generated', [pipeline], `${id}:1`, now, [
    { task_id: task.id, workflow_id: id, to: WF_PENDING },
  ]);
  const result = await deps.repo.insertWorkflow({ workflow, pipeline, outbox });
  if (result === 'duplicate') {
    const other = await deps.repo.getWorkflowIdOfAlarm(task.id, history.uuid);
    // A concurrent attempt for the same alarm that did not commit either: let the caller retry.
    if (other === undefined) throw new Error(`workflow of alarm ${history.uuid}: concurrent creation, retry`);
    return { id: other, created: false };
  }
  await announceNow(outbox, deps);
  return { id, created: true };
}

/**
 * Finishes the open workflows of a task's metric after a recovery (API guide §10.6): status 2, a
 * pipeline record by user 0 with remark `recovered`, reminders cancelled (epoch bump). Each workflow
 * is finished on its own (a concurrent operation on one does not stop the others). Returns the ids
 * finished by this call.
 */
export async function finishWorkflowsOfMetric(
  input: { task: Task; metric: string },
  deps: WorkflowDeps = defaultDeps,
): Promise<number[]> {
  const ids = await deps.repo.listOpenWorkflowIdsOfMetric(input.task.id, input.metric);
  const finished: number[] = [];
  for (const id of ids) {
    for (let attempt = 0; attempt < 5; attempt++) {
      const wf = (await deps.repo.getWorkflows([id])).get(id);
      if (!wf || !isOpen(wf.status)) break;
      const now = deps.now();
      const after: Workflow = {
        ...wf,
        status: WF_DONE,
        version: wf.version + 1,
        epoch: wf.epoch + 1,
        seq: nextSeq(wf),
        updated_at: now,
      };
      const pipeline = pipelineRecord(after, { status: WF_DONE, remark: 'recovered', created_by: 0, now });
      const outbox = announcement(
        'recovered',
        [pipeline],
        `${id}:${after.version}`,
        now,
        countMoves([{ before: wf, after }]),
      );
      if ((await deps.repo.applyWorkflowChanges([{ before: wf, after, pipeline }], outbox)) === 'ok') {
        finished.push(id);
        await announceNow(outbox, deps);
        break;
      }
    }
  }
  return finished;
}

// ---- Read -------------------------------------------------------------------------------------

/** GET /workflow/show: one Query on the workflow's item collection plus batched directory reads. */
/**
 * GET /workflow/show for a signed-in person: the workflow when the person may read its task (role 9,
 * or a permission on the task), else 403.
 */
export async function showWorkflowFor(
  uid: number,
  id: number,
  deps: WorkflowDeps = defaultDeps,
): Promise<WorkflowShown> {
  const view = await showWorkflow(id, deps);
  await requireReadOf(uid, view.workflow.task_id);
  return view;
}

export async function showWorkflow(id: number, deps: WorkflowDeps = defaultDeps): Promise<WorkflowShown> {
  const found = await deps.repo.getWorkflowWithPipelines(id);
  if (!found) throw new NotFoundError(`workflow [${id}] not found`);
  const { workflow, pipelines } = found;
  const uids = pipelines.map((p) => p.created_by).filter((u) => u > 0);
  const [users, task, snapshotDept] = await Promise.all([
    deps.getUsers(uids),
    deps.getTask(workflow.task_id),
    deps.getDepartment(workflow.department_id),
  ]);
  // The task may have been renamed, moved or deleted: show it as it is now, else as it was.
  const current = task
    ? { id: task.id, name: task.name, department_id: task.department_id }
    : { id: workflow.task_id, name: workflow.task_name, department_id: workflow.department_id };
  const dept =
    current.department_id === workflow.department_id
      ? snapshotDept
      : await deps.getDepartment(current.department_id);
  return {
    workflow: workflowView({
      workflow,
      pipelines,
      users: new Map(users.map((u) => [u.uid, u])),
      task: current,
      department: { id: current.department_id, name: dept?.name ?? '' },
    }),
  };
}

// ---- Batch operations -------------------------------------------------------------------------

function validateDistinct(input: OperationInput): void {
  const errors = [
    ...['ids', 'assignto'].flatMap((field) => {
      const dupes = repeated((input[field as 'ids' | 'assignto'] as number[] | undefined) ?? []);
      return dupes.length ? [{ field, message: `must be distinct, repeated: [${dupes.join(', ')}]` }] : [];
    }),
  ];
  if (errors.length) throw new ValidationError(errors);
}

/**
 * PUT /workflow/claim|assign|processed|reactive|close (API guide §10.3). All or nothing: every id must
 * exist (404), the acting user must exist and may act on every workflow's task (404/403), every
 * workflow must be in a state the operation allows (409), and the changes commit in one
 * transaction conditioned on each workflow's status and version. A concurrent change of one of the
 * workflows makes this request fail with 409 (exactly one concurrent operation wins).
 */
export function operateWorkflows(
  op: Operation,
  input: OperationInput,
  deps: WorkflowDeps = defaultDeps,
): Promise<WorkflowsOperated> {
  return operate(op, input, deps);
}

/** What a claim made with a claim link adds to the claim (API guide §11.7). */
export interface LinkClaim {
  /** The channel of the message that carried the link (recorded with the claim and in its event). */
  channel: NotifyChannel;
  /** The reactivation round the link was made in: a workflow reactivated since refuses it (409). */
  round: number;
}

/**
 * A claim with a claim link: the claim of `PUT /workflow/claim` (one workflow, by the acting user
 * `created_by`, with the same permission and state rules, exactly one winner among concurrent
 * operations), refused when the workflow was reactivated since the link was made; its pipeline record
 * and `claim` event carry `link: {channel}`.
 */
export function claimWithLink(
  input: { id: number; created_by: number },
  link: LinkClaim,
  deps: WorkflowDeps = defaultDeps,
): Promise<WorkflowsOperated> {
  return operate('claim', { ids: [input.id], created_by: input.created_by }, deps, link);
}

async function operate(
  op: Operation,
  input: OperationInput,
  deps: WorkflowDeps,
  link?: LinkClaim,
): Promise<WorkflowsOperated> {
  validateDistinct(input);
  const actor = input.created_by ?? 0;
  const remark = input.remark ?? '';

  let workflows = await loadAll(input.ids, deps);
  const users = await loadActors(actor, input.assignto ?? [], deps);
  await checkPermission(actor, users, [...workflows.values()], deps);

  for (let attempt = 0; ; attempt++) {
    for (const id of input.ids) {
      const wf = workflows.get(id) as Workflow;
      const why = refusal(op, wf) ?? (link ? staleRound(wf, link.round) : undefined);
      if (why) throw new ConflictError(why);
    }
    const now = deps.now();
    const assignto = (input.assignto ?? []).map((uid) => users.get(uid)).filter((u) => u !== undefined);
    const changes = input.ids.map((id) => {
      const before = workflows.get(id) as Workflow;
      const t = transition(op, before)!;
      const { claimer: _c, assignees: _a, ...rest } = before;
      const after: Workflow = {
        ...rest,
        ...ownershipAfter(
          op,
          before,
          actor,
          assignto.map((u) => u.uid),
        ),
        status: t.status,
        version: before.version + 1,
        epoch: before.epoch + (t.statusChanged ? 1 : 0),
        seq: nextSeq(before),
        updated_at: now,
        ...(op === 'reactive' ? { round: (before.round ?? 0) + 1 } : {}),
      };
      const pipeline = pipelineRecord(after, {
        status: t.pipeline,
        remark,
        created_by: actor,
        now,
        ...(op === 'assign' ? { props: { assignto: assignto.map(personProps) } } : {}),
        ...(link ? { props: { link: { channel: link.channel } } } : {}),
      });
      return { before, after, pipeline };
    });
    const first = changes[0].after;
    const outbox = announcement(
      op,
      changes.map((c) => c.pipeline),
      `${first.id}:${first.version}`,
      now,
      countMoves(changes),
    );
    if ((await deps.repo.applyWorkflowChanges(changes, outbox)) === 'ok') {
      await announceNow(outbox, deps);
      return operationResultView(changes.map((c) => c.after));
    }
    // Someone else touched one of the workflows. If one of them moved, that operation won: 409.
    const fresh = await loadAll(input.ids, deps);
    const moved = input.ids.find((id) => fresh.get(id)?.version !== workflows.get(id)?.version);
    if (moved !== undefined) {
      const why = refusal(op, fresh.get(moved) as Workflow);
      throw new ConflictError(why ?? `workflow [${moved}] was changed by a concurrent operation, try again`);
    }
    // A transient conflict with a transaction that did not commit: try again a few times.
    if (attempt >= 3) throw new ConflictError(`workflow [${input.ids.join(', ')}] is busy, try again`);
    workflows = fresh;
    await new Promise((r) => setTimeout(r, 10 + Math.random() * 40));
  }
}

const personProps = (u: User) => ({
  uid: u.uid,
  username: u.username,
  user: u.user,
  email: u.email,
  department: u.department,
});

async function loadAll(ids: number[], deps: WorkflowDeps): Promise<Map<number, Workflow>> {
  const workflows = await deps.repo.getWorkflows(ids);
  const missing = ids.filter((id) => !workflows.has(id));
  if (missing.length) throw new NotFoundError(`workflow [${missing.join(', ')}] not found`);
  return workflows;
}

async function loadActors(actor: number, assignto: number[], deps: WorkflowDeps): Promise<Map<number, User>> {
  const uids = [...(actor ? [actor] : []), ...assignto];
  if (uids.length === 0) return new Map();
  const users = new Map((await deps.getUsers(uids)).map((u) => [u.uid, u]));
  if (actor && !users.has(actor)) throw new NotFoundError(`user [${actor}] not found`);
  const missing = assignto.filter((uid) => !users.has(uid));
  if (missing.length) throw new NotFoundError(`user [${missing.join(', ')}] not found`);
  return users;
}

/**
 * The acting user needs role 9 or read-write permission (`rw`) on each workflow's task: a read-only
 * permission (`ro`) reads workflows but does not operate them. Without a named user the application
 * itself acts (the interface's rule; a deployment with STRICT_APP_GRANTS requires the app's grant
 * `operate` for that).
 */
async function checkPermission(
  actor: number,
  users: Map<number, User>,
  workflows: Workflow[],
  deps: WorkflowDeps,
) {
  if (!actor || users.get(actor)?.role === ROLE_SUPER_ADMIN) return;
  const taskIds = [...new Set(workflows.map((w) => w.task_id))];
  const permissions = await deps.repo.tasksWithPermission(actor, taskIds);
  const denied = taskIds.find((t) => !permissions.has(t));
  if (denied !== undefined) throw new ForbiddenError(`user [${actor}] has no permission on task [${denied}]`);
  const readOnly = taskIds.find((t) => permissions.get(t) !== 'rw');
  if (readOnly !== undefined)
    throw new ForbiddenError(`user [${actor}] has read-only permission on task [${readOnly}]`);
}

// ---- Pipeline records -------------------------------------------------------------------------

function pipelineRecord(
  after: Workflow,
  p: {
    status: PipelineRecord['status'];
    remark: string;
    created_by: number;
    now: number;
    props?: PipelineRecord['props'];
  },
): PipelineRecord {
  return {
    workflow_id: after.id,
    sk: keys.workflowPipeline(after.id, p.now, after.version).sk,
    status: p.status,
    remark: p.remark,
    props: p.props ?? {},
    created_by: p.created_by,
    created_at: p.now,
    workflow_status: after.status,
    workflow_epoch: after.epoch,
    ...(after.seq !== undefined ? { seq: after.seq } : {}),
  };
}
