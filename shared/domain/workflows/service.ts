import { nowSeconds } from '../../clock.ts';
import { keys } from '../../db/keys.ts';
import { logger } from '../../log.ts';
import type { ClaimTarget, NotificationJob } from '../../messaging/messages.ts';
import { publish } from '../../messaging/sqs.ts';
import type { HistoryRecord } from '../alarms/history.ts';
import { ROLE_SUPER_ADMIN, type User } from '../directory/model.ts';
import { getAlarmGroups, getDepartment, getUsers } from '../directory/repository.ts';
import { type DueItem, deleteDue, putDue } from '../due/repository.ts';
import { MalformedDueWork } from '../due/runner.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { withOncall } from '../notifications/oncall.ts';
import { alarmGroupIds, channelJobs, type Recipients, recipientsOf } from '../notifications/receivers.ts';
import { requireReadOf } from '../tasks/access.ts';
import type { ReceiverConfig, Task } from '../tasks/model.ts';
import type { NotifyChannel } from '../tasks/templates.ts';
import { getTask } from '../tasks/repository.ts';
import { publishWebhookEvents } from '../events/publish.ts';
import {
  type CountMove,
  countDeltas,
  isOpen,
  nextSeq,
  type Operation,
  ownershipAfter,
  type PipelineRecord,
  refusal,
  remindersFor,
  repeated,
  staleRound,
  transition,
  WF_DONE,
  WF_PENDING,
  type Workflow,
} from './model.ts';
import * as repo from './repository.ts';
import type { WorkflowShown, WorkflowsOperated } from './responses.ts';
import type { OperationInput } from './schemas.ts';
import {
  eventIdOf,
  operationResultView,
  renderContext,
  type WorkflowScene,
  workflowEvent,
  workflowEventData,
  workflowView,
} from './views.ts';

/** Due-work kinds of this module (its handler: due-work.ts). */
export const ANNOUNCE_KIND = 'workflow-announce';
export const REMIND_KIND = 'workflow-remind';

/** `recovered`: a workflow finished by a recovery (announced as `processed`, no channel notifications). */
export type AnnounceScene = WorkflowScene | 'recovered';

export interface AnnouncePayload {
  scene: AnnounceScene;
  records: { workflow_id: number; sk: string }[];
  /** The workflows' moves between the task counts (applied once: runAnnouncement). */
  counts?: CountMove[];
  /** Set (in the table and in hand) once the counts are applied. */
  counted?: boolean;
}

export interface RemindPayload {
  workflow_id: number;
  /** Index of the reminder in the task's `workflow.reminds`. */
  index: number;
  /** The workflow epoch the reminder was scheduled in. */
  epoch: number;
}

export const defaultDeps = {
  now: nowSeconds,
  repo,
  getUsers,
  getTask,
  getDepartment,
  getAlarmGroups,
  publishWebhookEvents,
  publishJobs: (jobs: NotificationJob[]) =>
    publish(
      'notify',
      jobs.map((body) => ({ body })),
    ),
  putDue,
  deleteDue,
};
export type WorkflowDeps = typeof defaultDeps;

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

// ---- Announcements (outbox) -------------------------------------------------------------------

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

function announcement(
  scene: AnnounceScene,
  records: PipelineRecord[],
  ref: string,
  now: number,
  counts: CountMove[],
): DueItem {
  const payload: AnnouncePayload = {
    scene,
    records: records.map((r) => ({ workflow_id: r.workflow_id, sk: r.sk })),
    ...(counts.length ? { counts } : {}),
  };
  return { kind: ANNOUNCE_KIND, ref, due_at: now, payload: payload as unknown as Record<string, unknown> };
}

/**
 * The count moves of status changes: only counted workflows move (one stored before the counts
 * existed enters them, with its status at that moment, when the backfill reaches it).
 */
function countMoves(changes: { before: Workflow; after: Workflow }[]): CountMove[] {
  return changes.flatMap(({ before, after }) =>
    before.counted && before.status !== after.status
      ? [{ task_id: after.task_id, workflow_id: after.id, from: before.status, to: after.status }]
      : [],
  );
}

/** Transactions that lost to a concurrent one on a counter item, before the counts wait for the next run. */
const COUNT_ATTEMPTS = 6;

/** Applies an announcement's count moves once (AP-F12), retrying a lost race with jittered backoff. */
async function applyCounts(outbox: DueItem, moves: CountMove[], deps: WorkflowDeps): Promise<void> {
  const deltas = countDeltas(moves, deps.repo.countShardOf);
  if (deltas.length === 0) return;
  for (let attempt = 1; ; attempt++) {
    if ((await deps.repo.applyWorkflowCounts(outbox, deltas)) !== 'conflict') return;
    if (attempt >= COUNT_ATTEMPTS)
      throw new Error(`workflow counts of ${outbox.ref}: busy, left for the next run`);
    await new Promise((r) => setTimeout(r, Math.random() * 20 * 2 ** attempt));
  }
}

/**
 * Settles an announcement (outbox item): its count moves first (exactly once, whoever runs it), then
 * its events, notifications and reminders (at least once). Run right after the commit and, when that
 * failed, by the scheduled run (due kind `workflow-announce`), which then deletes the item.
 */
export async function runAnnouncement(outbox: DueItem, deps: WorkflowDeps = defaultDeps): Promise<void> {
  const payload = announcePayloadOf(outbox.payload);
  if (payload.counts?.length && !payload.counted) {
    await applyCounts(outbox, payload.counts, deps);
    // The runner buries the item it holds when publishing keeps failing: it must say so too.
    payload.counted = true;
  }
  await announce(payload, deps);
}

/** An outbox item's payload, checked: one that names no pipeline records can never be announced. */
function announcePayloadOf(payload: Record<string, unknown>): AnnouncePayload {
  const records = payload.records;
  const isKey = (r: unknown) =>
    typeof (r as { workflow_id?: unknown })?.workflow_id === 'number' &&
    typeof (r as { sk?: unknown }).sk === 'string';
  if (!Array.isArray(records) || !records.every(isKey))
    throw new MalformedDueWork('announcement: records must be a list of {workflow_id, sk}');
  return payload as unknown as AnnouncePayload;
}

/**
 * Publishes an announcement right after its transaction committed, then removes it from the due
 * work. If publishing fails the item stays, and the next scheduled run publishes it (the operation
 * itself has succeeded; event and job ids are deterministic, so a repeat is de-duplicated).
 */
async function announceNow(outbox: DueItem, deps: WorkflowDeps): Promise<void> {
  try {
    await runAnnouncement(outbox, deps);
    await deps.deleteDue(outbox);
  } catch (err) {
    logger.warn('workflow announcement deferred to the scheduled run', {
      ref: outbox.ref,
      error: err as Error,
    });
  }
}

/**
 * Who receivers name, with their alarm groups (dispatch does not apply; robots per set, API guide
 * §9.7), and whoever the schedules they name have on call now.
 */
export async function channelsOf(
  receivers: ReceiverConfig[],
  deps: WorkflowDeps = defaultDeps,
): Promise<Recipients> {
  const plain = receivers.map((r) => ({ alarmgroup: r.alarmgroup, channels: r.channels, oncall: r.oncall }));
  const { sets, oncall } = await withOncall(plain, deps.now());
  const ids = alarmGroupIds(sets);
  const groups = ids.length ? await deps.getAlarmGroups(ids) : [];
  return { ...recipientsOf(sets, groups), oncall };
}

/**
 * The webhook event of one workflow notice and, unless `silent`, its channel notifications; `claim`:
 * the workflow is pending, and the notifications carry claim links (API guide §11.7).
 */
export async function noticeOf(input: {
  scene: WorkflowScene;
  task: Task;
  data: Record<string, unknown>;
  eventId: string;
  channels?: Recipients;
  claim?: ClaimTarget;
}): Promise<{ event: { body: ReturnType<typeof workflowEvent>; eventId: string }; jobs: NotificationJob[] }> {
  const { scene, task, data, eventId, channels, claim } = input;
  const jobs = channels
    ? channelJobs(channels, {
        job_id: eventId,
        task_id: task.id,
        scene,
        context: renderContext(task, data),
        ...(claim ? { claim } : {}),
      })
    : [];
  return { event: { body: workflowEvent(scene, data), eventId }, jobs };
}

/**
 * Publishes what a set of pipeline records announce: one WORKFLOW event each (to the task webhook),
 * notification jobs to the task's receivers, and the reminders of the status the workflow entered
 * (generated and reactive: the pending reminders; claim: the processing ones). Re-runnable: ids are
 * deterministic and reminder due items are keyed by (workflow, reminder, epoch, time).
 */
export async function announce(payload: AnnouncePayload, deps: WorkflowDeps = defaultDeps): Promise<void> {
  const records = await deps.repo.getPipelineRecords(payload.records);
  if (records.length === 0) return;
  const workflows = await deps.repo.getWorkflows(records.map((r) => r.workflow_id));
  const taskIds = [...new Set([...workflows.values()].map((w) => w.task_id))];
  const [users, tasks] = await Promise.all([
    deps.getUsers(records.map((r) => r.created_by).filter((u) => u > 0)),
    Promise.all(taskIds.map((id) => deps.getTask(id))),
  ]);
  const userMap = new Map(users.map((u) => [u.uid, u]));
  const taskMap = new Map(tasks.filter((t) => t !== undefined).map((t) => [t.id, t]));
  const silent = payload.scene === 'recovered';
  const scene: WorkflowScene = payload.scene === 'recovered' ? 'processed' : payload.scene;
  const channelsByTask = new Map<number, Recipients>();
  if (!silent) {
    for (const t of taskMap.values()) channelsByTask.set(t.id, await channelsOf([t.receiver ?? {}], deps));
  }

  const eventsByTask = new Map<number, { body: ReturnType<typeof workflowEvent>; eventId: string }[]>();
  const jobs: NotificationJob[] = [];
  const reminders: DueItem[] = [];
  for (const record of records) {
    const wf = workflows.get(record.workflow_id);
    const task = wf ? taskMap.get(wf.task_id) : undefined;
    // A deleted task has no receivers and no webhook any more.
    if (!wf || !task) continue;
    const data = workflowEventData({
      scene,
      task,
      workflow: wf,
      status: record.workflow_status,
      pipeline: record,
      users: userMap,
    });
    const notice = await noticeOf({
      scene,
      task,
      data,
      eventId: eventIdOf(record),
      channels: channelsByTask.get(task.id),
      // A workflow made pending (created: round 0; reactivated: the round it entered).
      ...(scene === 'generated' || scene === 'reactive'
        ? { claim: { workflow_id: wf.id, round: scene === 'generated' ? 0 : (wf.round ?? 0) } }
        : {}),
    });
    eventsByTask.set(task.id, [...(eventsByTask.get(task.id) ?? []), notice.event]);
    jobs.push(...notice.jobs);
    if (scene === 'generated' || scene === 'claim' || scene === 'reactive') {
      reminders.push(...reminderItems(task, record));
    }
  }
  for (const [taskId, events] of eventsByTask) await deps.publishWebhookEvents(taskId, events);
  if (jobs.length) await deps.publishJobs(jobs);
  for (const r of reminders) await deps.putDue(r);
}

/** The due items of the reminders a workflow gets when it enters the status of `record`. */
export function reminderItems(task: Task, record: PipelineRecord): DueItem[] {
  const reminds = task.workflow?.enable ? task.workflow.reminds : [];
  return remindersFor(reminds, record.workflow_status).map(({ index, reminder }) => {
    const payload: RemindPayload = { workflow_id: record.workflow_id, index, epoch: record.workflow_epoch };
    return {
      kind: REMIND_KIND,
      ref: `${record.workflow_id}:${index}:${record.workflow_epoch}`,
      due_at: record.created_at + reminder.interval * 60,
      payload: payload as unknown as Record<string, unknown>,
    };
  });
}
