/**
 * GET /workflow/list and GET /workflow/counts (API guide §13.5): a task's workflows newest first,
 * by status, claimer, assignee and creation time, and the counts by status of tasks.
 *
 * The listing reads gsi2 `WFTASK#<task>#<status>` (sorted by creation time, then id): one status is
 * one range; all statuses are the four ranges merged newest first. The counts are counter items
 * kept by the workflows' own announcements (repository AP-F12), so no call reads a task's history.
 */
import { keys } from '../../db/keys.ts';
import type { Person } from '../directory/model.ts';
import { getDepartment, getUsers } from '../directory/repository.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { loadReader, taskForUser } from '../tasks/access.ts';
import {
  compareKeys,
  DEFAULT_LIMIT,
  decodeCursor,
  encodeCursor,
  MAX_LIMIT,
  pagingProperties,
} from '../tasks/list.ts';
import { existingTaskIds, listPermissionsOfUser } from '../tasks/repository.ts';
import { ID_SCHEMA } from '../validation.ts';
import { ownershipOfRecords, type Workflow, type WorkflowStatus } from './model.ts';
import type { WorkflowCountList, WorkflowList, WorkflowSummary } from './responses.ts';
import * as repo from './repository.ts';
import * as listing from './repository-listing.ts';
import { personOf, workflowView } from './views.ts';

// ---- Input --------------------------------------------------------------------------------------

const unixSeconds = { type: 'integer', minimum: 0, maximum: 9_999_999_999 } as const;

export const listWorkflowsSchema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: {
    uid: ID_SCHEMA,
    task_id: ID_SCHEMA,
    status: { type: 'integer', enum: [0, 1, 2, 9] },
    claimer: ID_SCHEMA,
    assignee: ID_SCHEMA,
    from: unixSeconds,
    to: unixSeconds,
    ...pagingProperties,
  },
};

export interface ListWorkflowsInput {
  uid: number;
  task_id: number;
  status?: WorkflowStatus;
  claimer?: number;
  assignee?: number;
  from?: number;
  to?: number;
  limit?: number;
  cursor?: string;
}

/** Tasks one counts request may name. */
export const MAX_COUNT_TASKS = 100;

export const countWorkflowsSchema = {
  type: 'object',
  required: ['uid'],
  properties: {
    uid: ID_SCHEMA,
    task_id: ID_SCHEMA,
    task_ids: {
      type: 'string',
      maxLength: 2000,
      pattern: '^[1-9][0-9]{0,15}(,[1-9][0-9]{0,15})*$',
      'x-message': 'must be task ids separated by commas',
    },
  },
};

export interface CountWorkflowsInput {
  uid: number;
  task_id?: number;
  task_ids?: string;
}

// ---- Order and cursor (pure) ----------------------------------------------------------------------

export const STATUSES: readonly WorkflowStatus[] = [0, 1, 2, 9];

/** A cursor of the listing: `u`, the greatest listing key (creation time#id) the next page may hold. */
export interface WorkflowCursor {
  u: string;
}

const LISTING_KEY = /^\d{10}#\d{12}$/;

export const isWorkflowCursor = (v: unknown): v is WorkflowCursor =>
  !!v &&
  typeof v === 'object' &&
  typeof (v as Record<string, unknown>).u === 'string' &&
  LISTING_KEY.test((v as WorkflowCursor).u);

/** The listing key just before `sk` (keys are fixed-width: creation time, then id). */
export function keyBefore(sk: string): string | undefined {
  const [at, id] = sk.split('#').map(Number);
  if (id > 0) return keys.workflowOfTaskSk(at, id - 1);
  return at > 0 ? keys.workflowOfTaskSk(at - 1, 999_999_999_999) : undefined;
}

/** The key range of a listing: `from`..`to` (inclusive, creation time) below the cursor's bound. */
export function keyRange(from: number | undefined, to: number | undefined, cursor?: WorkflowCursor) {
  const lo = keys.workflowOfTaskSk(from ?? 0, 0);
  let hi = keys.workflowOfTaskSk(to ?? 9_999_999_999, 999_999_999_999);
  if (cursor && cursor.u < hi) hi = cursor.u;
  return hi >= lo ? { lo, hi } : undefined;
}

// ---- View -----------------------------------------------------------------------------------------

type ViewData = Omit<Parameters<typeof workflowView>[0], 'workflow' | 'pipelines'>;

/**
 * A workflow in a listing: the view of GET /workflow/show without its pipeline records (one Query per
 * workflow; /workflow/show has them), with its owners: `claimer` (null when unclaimed or claimed by
 * the application) and `assignees` of the latest assign.
 */
export function workflowSummary(w: Workflow, data: ViewData): WorkflowSummary {
  const { pipelines: _, task, history, ...head } = workflowView({ workflow: w, pipelines: [], ...data });
  return {
    ...head,
    claimer: w.claimer ? personOf(w.claimer, data.users) : null,
    assignees: (w.assignees ?? []).map((uid) => personOf(uid, data.users) as Person),
    task,
    history,
  };
}

// ---- Use cases ------------------------------------------------------------------------------------

export const workflowListDeps = {
  taskForUser,
  loadReader,
  listPermissionsOfUser,
  existingTaskIds,
  getUsers,
  getDepartment,
  queryWorkflowsOfTask: listing.queryWorkflowsOfTask,
  getWorkflowCounts: listing.getWorkflowCounts,
};
export type WorkflowListDeps = typeof workflowListDeps;

/** Index Queries one request may make before it answers with what it found and a cursor. */
export const MAX_QUERIES = 12;

interface Stream {
  status: WorkflowStatus;
  buffer: { workflow: Workflow; sk: string }[];
  next?: Record<string, unknown>;
  done: boolean;
}

/**
 * GET /workflow/list: 404 unknown user or task, 403 without permission on the task. A page may hold
 * fewer than `limit` workflows while `next_cursor` is set (claimer/assignee filters over a long
 * history stop after MAX_QUERIES index reads): follow the cursor until it is empty.
 */
export async function listWorkflows(
  input: ListWorkflowsInput,
  deps: WorkflowListDeps = workflowListDeps,
): Promise<WorkflowList> {
  if (input.from !== undefined && input.to !== undefined && input.from > input.to) {
    throw ValidationError.of('to', 'must not be before from');
  }
  const cursor = input.cursor ? decodeCursor(input.cursor, isWorkflowCursor) : undefined;
  const task = await deps.taskForUser(input.uid, input.task_id, 'read');
  const limit = input.limit ?? DEFAULT_LIMIT;
  const range = keyRange(input.from, input.to, cursor);
  const filter: listing.WorkflowFilter = {
    ...(input.claimer !== undefined ? { claimer: input.claimer } : {}),
    ...(input.assignee !== undefined ? { assignee: input.assignee } : {}),
  };
  const filtered = Object.keys(filter).length > 0;
  const streams: Stream[] = (input.status !== undefined ? [input.status] : STATUSES).map((status) => ({
    status,
    buffer: [],
    done: !range,
  }));
  const found: { workflow: Workflow; sk: string }[] = [];
  let queries = 0;
  let next: string | undefined;
  for (;;) {
    // Every stream that may hold the next workflow needs its head.
    const empty = streams.filter((s) => !s.done && s.buffer.length === 0);
    if (empty.length && queries + empty.length > MAX_QUERIES) {
      next = resumeKey(streams);
      break;
    }
    await Promise.all(
      empty.map(async (s) => {
        const page = await deps.queryWorkflowsOfTask({
          taskId: task.id,
          status: s.status,
          from: range!.lo,
          upTo: range!.hi,
          filter,
          evaluate: filtered ? MAX_LIMIT : limit + 1 - found.length,
          startKey: s.next,
        });
        s.buffer.push(...page.workflows);
        s.next = page.next;
        if (!page.next) s.done = true;
      }),
    );
    queries += empty.length;
    if (streams.some((s) => !s.done && s.buffer.length === 0)) continue;
    const head = streams
      .filter((s) => s.buffer.length > 0)
      .sort((a, b) => compareKeys(b.buffer[0].sk, a.buffer[0].sk))[0];
    if (!head) break;
    found.push(head.buffer.shift()!);
    if (found.length > limit) {
      next = keyBefore(found[limit - 1].sk);
      found.length = limit;
      break;
    }
  }
  const workflows = found.map((f) => f.workflow);
  const uids = [
    ...new Set(workflows.flatMap((w) => [w.claimer ?? 0, ...(w.assignees ?? [])]).filter((u) => u > 0)),
  ];
  const [users, department] = await Promise.all([
    uids.length ? deps.getUsers(uids) : Promise.resolve([]),
    deps.getDepartment(task.department_id),
  ]);
  const data: ViewData = {
    users: new Map(users.map((u) => [u.uid, u])),
    task: { id: task.id, name: task.name, department_id: task.department_id },
    department: { id: task.department_id, name: department?.name ?? '' },
  };
  return {
    workflows: workflows.map((w) => workflowSummary(w, data)),
    next_cursor: next ? encodeCursor({ u: next } satisfies WorkflowCursor) : '',
  };
}

/**
 * Where a listing stopped by its budget continues: every workflow above the returned key was listed
 * or filtered out. A stream with buffered workflows continues at its head (included); one read up to
 * a key continues below that key.
 */
function resumeKey(streams: Stream[]): string | undefined {
  let best: string | undefined;
  for (const s of streams) {
    if (s.done && s.buffer.length === 0) continue;
    const k = s.buffer.length > 0 ? s.buffer[0].sk : keyBefore(String(s.next?.gsi2sk));
    if (k !== undefined && (best === undefined || compareKeys(k, best) > 0)) best = k;
  }
  return best;
}

/** The task ids of a counts request: `task_id`, or `task_ids` (distinct, at most MAX_COUNT_TASKS). */
export function countTaskIds(input: CountWorkflowsInput): number[] {
  if (input.task_id !== undefined && input.task_ids !== undefined) {
    throw ValidationError.of('task_ids', 'must not be given with task_id');
  }
  if (input.task_id !== undefined) return [input.task_id];
  if (input.task_ids === undefined) throw ValidationError.of('task_id', 'is required (or task_ids)');
  const ids = [...new Set(input.task_ids.split(',').map(Number))];
  if (ids.some((id) => !Number.isSafeInteger(id)))
    throw ValidationError.of('task_ids', 'must be task ids separated by commas');
  if (ids.length > MAX_COUNT_TASKS)
    throw ValidationError.of('task_ids', `must name at most ${MAX_COUNT_TASKS} tasks`);
  return ids;
}

/**
 * GET /workflow/counts: each task's workflows by status (`total` their sum), in the order asked.
 * All or nothing: 404 names the unknown tasks, 403 the first task the user may not read.
 */
export async function countWorkflows(
  input: CountWorkflowsInput,
  deps: WorkflowListDeps = workflowListDeps,
): Promise<WorkflowCountList> {
  const ids = countTaskIds(input);
  const [reader, known] = await Promise.all([deps.loadReader(input.uid), deps.existingTaskIds(ids)]);
  const missing = ids.filter((id) => !known.has(id));
  if (missing.length) throw new NotFoundError(`task [${missing.join(', ')}] not found`);
  if (!reader.admin) {
    const held = new Set((await deps.listPermissionsOfUser(input.uid)).map((p) => p.task_id));
    const denied = ids.find((id) => !held.has(id));
    if (denied !== undefined)
      throw new ForbiddenError(`user [${input.uid}] has no permission on task [${denied}]`);
  }
  const counts = await deps.getWorkflowCounts(ids);
  return {
    counts: ids.map((id) => {
      const c = counts.get(id) ?? { pending: 0, processing: 0, done: 0, closed: 0 };
      return { task_id: id, ...c, total: c.pending + c.processing + c.done + c.closed };
    }),
  };
}

// ---- Maintenance ------------------------------------------------------------------------------------

/**
 * Puts the workflows stored before the listing and counts existed into both (AP-F15): a Scan for
 * workflows without `counted`, then per workflow its owners replayed from its pipeline records and
 * one transaction (listing entry, owners, `counted`, +1 on its task's counts), re-read and retried
 * when it changed meanwhile. Idempotent: a second run finds nothing to do. For `npm run admin --
 * backfill`.
 */
export async function backfillWorkflowIndex(
  deps = {
    scan: listing.scanUncountedWorkflows,
    load: repo.getWorkflowWithPipelines,
    count: listing.countStoredWorkflow,
  },
): Promise<{ scanned: number; counted: number }> {
  let scanned = 0;
  let counted = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.scan(start);
    scanned += page.scanned;
    for (const id of page.ids) {
      for (let attempt = 0; attempt < 5; attempt++) {
        const found = await deps.load(id);
        if (!found || found.workflow.counted) break;
        if (await deps.count(found.workflow, ownershipOfRecords(found.pipelines))) {
          counted++;
          break;
        }
      }
    }
    start = page.next;
  } while (start);
  return { scanned, counted };
}
