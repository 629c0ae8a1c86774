/**
 * Workflow instances (API guide §10.2, §10.4): types and pure transitions. No I/O here.
 */
import type { HistoryRecord } from '../alarms/history.ts';
import type { Person } from '../directory/model.ts';
import type { Reminder, Task, TaskStatus } from '../tasks/model.ts';
import type { NotifyChannel } from '../tasks/templates.ts';
import { effectiveStatus, TASK_PAUSED, TASK_RUNNING } from '../tasks/model.ts';

export const WF_PENDING = 0;
export const WF_PROCESSING = 1;
export const WF_DONE = 2;
export const WF_CLOSED = 9;
export type WorkflowStatus = 0 | 1 | 2 | 9;

/** Pipeline record statuses: the workflow statuses plus 3 remind, 4 assign, 5 reactivate. */
export const PIPE_REMIND = 3;
export const PIPE_ASSIGN = 4;
export const PIPE_REACTIVE = 5;
export type PipelineStatus = 0 | 1 | 2 | 3 | 4 | 5 | 9;

export const STATUS_NAMES: Record<WorkflowStatus, string> = {
  0: 'pending',
  1: 'processing',
  2: 'done',
  9: 'closed',
};

export function isOpen(status: WorkflowStatus): boolean {
  return status === WF_PENDING || status === WF_PROCESSING;
}

/** A workflow as stored (the item `WF#<id>` / `WF`). */
export interface Workflow {
  id: number;
  task_id: number;
  metric: string;
  history_id: number;
  status: WorkflowStatus;
  created_at: number;
  updated_at: number;
  /** Incremented by every operation (optimistic concurrency; orders pipeline records). */
  version: number;
  /**
   * Incremented by every pipeline record, operations and fired reminders alike: the sequence number
   * of the workflow's events (API guide §12.6). Absent on a workflow written before it was counted.
   */
  seq?: number;
  /**
   * Incremented by every status change. A scheduled reminder carries the epoch it was scheduled in;
   * a mismatch when it is due means the workflow moved on, which is how reminders are cancelled.
   */
  epoch: number;
  /** Snapshot of the task when the workflow was generated (the task may be deleted later). */
  task_name: string;
  department_id: number;
  /** Snapshot of the alarm the workflow was generated from. */
  history: HistoryRecord;
  /**
   * Who claimed it (0: the application); absent until a claim, removed by reactive (a pending
   * workflow is nobody's). The list filters on it (GET /workflow/list `claimer`).
   */
  claimer?: number;
  /** The users of its latest assign (GET /workflow/list `assignee`). */
  assignees?: number[];
  /**
   * How many times it was reactivated (absent: never). A claim link names the round it was made in;
   * a reactivation since voids it (API guide §11.7).
   */
  round?: number;
  /**
   * Whether the workflow is in its task's counts and the listing index (every workflow created since
   * they exist; older ones once the backfill reached them): its operations move it between counts.
   */
  counted?: boolean;
}

/** What a pipeline record's `props` holds (API guide §10.4). */
export interface PipelineProps {
  assignto?: Person[];
  remind?: { interval: number; status: WorkflowStatus };
  /** A claim made with a claim link, and the channel of the message that carried it (API guide §11.7). */
  link?: { channel: NotifyChannel };
}

/** A process record (the item `WF#<id>` / `PIPE#...`). */
export interface PipelineRecord {
  workflow_id: number;
  /** The record's sort key: its identity inside the workflow. */
  sk: string;
  status: PipelineStatus;
  remark: string;
  props: PipelineProps;
  /** 0 = the application / the system. */
  created_by: number;
  created_at: number;
  /** The workflow's status and epoch right after this record (events and reminder scheduling). */
  workflow_status: WorkflowStatus;
  workflow_epoch: number;
  /** The workflow's `seq` right after this record: its event's sequence number. */
  seq?: number;
}

/** The workflow's `seq` after one more pipeline record (one written before it was counted starts from its version). */
export const nextSeq = (w: Pick<Workflow, 'seq' | 'version'>): number => (w.seq ?? w.version) + 1;

export type Operation = 'claim' | 'assign' | 'processed' | 'reactive' | 'close';
export const OPERATIONS: readonly Operation[] = ['claim', 'assign', 'processed', 'reactive', 'close'];

interface OperationRule {
  from: readonly WorkflowStatus[];
  /** New status; undefined keeps the status (assign). */
  to?: WorkflowStatus;
  pipeline: PipelineStatus;
  /** The tail of the 409 message: `only <from> workflows can be <verb>`. */
  verb: string;
}

/** The state table of API guide §10.2. */
export const OPERATION_RULES: Record<Operation, OperationRule> = {
  claim: { from: [WF_PENDING], to: WF_PROCESSING, pipeline: WF_PROCESSING, verb: 'claimed' },
  assign: { from: [WF_PENDING, WF_PROCESSING], pipeline: PIPE_ASSIGN, verb: 'assigned' },
  processed: { from: [WF_PROCESSING], to: WF_DONE, pipeline: WF_DONE, verb: 'processed' },
  reactive: { from: [WF_CLOSED], to: WF_PENDING, pipeline: PIPE_REACTIVE, verb: 'reactivated' },
  close: { from: [WF_PENDING, WF_PROCESSING], to: WF_CLOSED, pipeline: WF_CLOSED, verb: 'closed' },
};

export interface Transition {
  status: WorkflowStatus;
  pipeline: PipelineStatus;
  /** A status change bumps the epoch (cancelling the reminders of the old status). */
  statusChanged: boolean;
}

/** Why `op` may not run on a workflow in `status`, or undefined when it may. */
export function refusal(op: Operation, wf: Pick<Workflow, 'id' | 'status'>): string | undefined {
  const rule = OPERATION_RULES[op];
  if (rule.from.includes(wf.status)) return undefined;
  const from = rule.from.map((s) => STATUS_NAMES[s]).join(' or ');
  return `workflow [${wf.id}] is ${STATUS_NAMES[wf.status]}, only ${from} workflows can be ${rule.verb}`;
}

/** Why a claim link made in reactivation round `round` no longer claims `wf`, or undefined. */
export function staleRound(wf: Pick<Workflow, 'id' | 'round'>, round: number): string | undefined {
  return (wf.round ?? 0) === round
    ? undefined
    : `workflow [${wf.id}] was reactivated after the link was sent`;
}

/** The result of `op` on a workflow; throws nothing, returns undefined when refused (see `refusal`). */
export function transition(op: Operation, wf: Pick<Workflow, 'id' | 'status'>): Transition | undefined {
  if (refusal(op, wf) !== undefined) return undefined;
  const rule = OPERATION_RULES[op];
  const status = rule.to ?? wf.status;
  return { status, pipeline: rule.pipeline, statusChanged: status !== wf.status };
}

/** Who owns a workflow after `op` by `actor` (0: the application), `assignto` the uids of an assign. */
export function ownershipAfter(
  op: Operation,
  before: Pick<Workflow, 'claimer' | 'assignees'>,
  actor: number,
  assignto: number[],
): Pick<Workflow, 'claimer' | 'assignees'> {
  const out: Pick<Workflow, 'claimer' | 'assignees'> = {};
  const claimer = op === 'claim' ? actor : op === 'reactive' ? undefined : before.claimer;
  const assignees = op === 'assign' ? assignto : before.assignees;
  if (claimer !== undefined) out.claimer = claimer;
  if (assignees !== undefined) out.assignees = assignees;
  return out;
}

/** The same, replayed over a workflow's pipeline records (the backfill of workflows stored before). */
export function ownershipOfRecords(
  records: Pick<PipelineRecord, 'status' | 'created_by' | 'props' | 'created_at' | 'sk'>[],
): Pick<Workflow, 'claimer' | 'assignees'> {
  let owner: Pick<Workflow, 'claimer' | 'assignees'> = {};
  const ordered = [...records].sort(
    (a, b) => a.created_at - b.created_at || (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0),
  );
  for (const r of ordered) {
    const op: Operation | undefined =
      r.status === WF_PROCESSING
        ? 'claim'
        : r.status === PIPE_ASSIGN
          ? 'assign'
          : r.status === PIPE_REACTIVE
            ? 'reactive'
            : undefined;
    if (op)
      owner = ownershipAfter(
        op,
        owner,
        r.created_by,
        (r.props?.assignto ?? []).map((p) => p.uid),
      );
  }
  return owner;
}

// ---- Counts by status (GET /workflow/counts) --------------------------------------------------

export const COUNT_FIELDS = { 0: 'pending', 1: 'processing', 2: 'done', 9: 'closed' } as const;
export type CountField = (typeof COUNT_FIELDS)[WorkflowStatus];

/** A workflow entering the counts (`from` absent: created) or moving between two statuses. */
export interface CountMove {
  task_id: number;
  workflow_id: number;
  from?: WorkflowStatus;
  to: WorkflowStatus;
}

/** What one counter item (a task's shard) gains or loses. */
export interface CountDelta {
  task_id: number;
  shard: number;
  delta: Partial<Record<CountField, number>>;
}

/** The moves summed per counter item (`shardOf` a workflow id); items left unchanged are dropped. */
export function countDeltas(moves: CountMove[], shardOf: (workflowId: number) => number): CountDelta[] {
  const byItem = new Map<string, CountDelta>();
  for (const m of moves) {
    if (m.from === m.to) continue;
    const shard = shardOf(m.workflow_id);
    const key = `${m.task_id}:${shard}`;
    const d = byItem.get(key) ?? { task_id: m.task_id, shard, delta: {} };
    byItem.set(key, d);
    const to = COUNT_FIELDS[m.to];
    d.delta[to] = (d.delta[to] ?? 0) + 1;
    if (m.from !== undefined) {
      const from = COUNT_FIELDS[m.from];
      d.delta[from] = (d.delta[from] ?? 0) - 1;
    }
  }
  return [...byItem.values()].flatMap((d) => {
    const delta = Object.fromEntries(Object.entries(d.delta).filter(([, n]) => n !== 0));
    return Object.keys(delta).length ? [{ ...d, delta }] : [];
  });
}

/** Values repeated in a list, in order of their first repeat. */
export function repeated(values: readonly number[]): number[] {
  const seen = new Set<number>();
  const out = new Set<number>();
  for (const v of values) {
    if (seen.has(v)) out.add(v);
    seen.add(v);
  }
  return [...out];
}

/**
 * Ids per batch operation. Each workflow is two items of one transaction (the state update and its
 * pipeline record) and the transaction carries one outbox item; DynamoDB allows 100 items.
 */
export const MAX_BATCH_IDS = 49;

// ---- Reminders (API guide §10.5, §9.8) -----------------------------------------------------------

/** The reminders (with their index in the task's list) that apply to workflows in `status`. */
export function remindersFor(reminds: readonly Reminder[] | undefined, status: WorkflowStatus) {
  return (reminds ?? []).flatMap((r, index) => (r.status === status ? [{ index, reminder: r }] : []));
}

export type RemindDecision =
  | { action: 'drop'; reason: string }
  | { action: 'hold'; until: number }
  | { action: 'fire'; reminder: Reminder };

/**
 * What to do with a reminder when it is due: drop it when its workflow moved on (another epoch or
 * status) or its configuration is gone; hold it while the task is not running (until the pause ends,
 * or re-check in a minute when stopped); fire it otherwise.
 */
export function remindDecision(input: {
  workflow: Pick<Workflow, 'status' | 'epoch'> | undefined;
  task: Pick<Task, 'status' | 'paused_until' | 'workflow'> | undefined;
  index: number;
  epoch: number;
  now: number;
}): RemindDecision {
  const { workflow, task, index, epoch, now } = input;
  if (!workflow) return { action: 'drop', reason: 'workflow not found' };
  if (workflow.epoch !== epoch) return { action: 'drop', reason: 'workflow moved on' };
  if (!task) return { action: 'drop', reason: 'task not found' };
  const reminder = task.workflow?.enable ? task.workflow.reminds?.[index] : undefined;
  if (!reminder) return { action: 'drop', reason: 'reminder no longer configured' };
  if (reminder.status !== workflow.status)
    return { action: 'drop', reason: 'reminder is for another status' };
  const status: TaskStatus = effectiveStatus(task, now);
  if (status !== TASK_RUNNING) {
    const until =
      status === TASK_PAUSED && task.paused_until && task.paused_until > now ? task.paused_until : now + 60;
    return { action: 'hold', until };
  }
  return { action: 'fire', reminder };
}

export const remindScene = (status: WorkflowStatus) =>
  status === WF_PENDING ? ('remind_pending' as const) : ('remind_processing' as const);
