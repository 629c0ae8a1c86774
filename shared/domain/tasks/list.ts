/**
 * GET /alarmtask/list (API guide §13.2): the tasks the acting user may read, searched by a prefix of
 * the name or of its pinyin, filtered by department, status and tag, paged with a cursor.
 *
 * Order: by lower-cased pinyin (then id). With `q`, the tasks whose pinyin starts with it come first
 * (gsi1), then those whose name starts with it but not their pinyin (gsi2: a Chinese prefix such as
 * 日志, or a polyphonic character read otherwise in the name's context). A super administrator's
 * listing reads those index ranges; anyone else's is the tasks they hold permissions on (a few, as
 * a rule), read by key and put in the same order in memory.
 */
import { nowSeconds } from '../../clock.ts';
import { keys } from '../../db/keys.ts';
import { getDepartments, getTags } from '../directory/repository.ts';
import { decodeCursor as decodeAnyCursor, encodeCursor } from '../cursor.ts';
import { ID_SCHEMA } from '../validation.ts';
import { loadReader } from './access.ts';
import { effectiveStatus, TASK_PAUSED, type Task } from './model.ts';
import * as repo from './repository.ts';
import type { TaskList, TaskSummary } from './responses.ts';
import * as listing from './repository-listing.ts';

// ---- Paging (shared by the listings of this issue) ---------------------------------------------

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** The paging parameters of every listing: `limit` 1..100 (default 20), an opaque `cursor`. */
export const pagingProperties = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
  cursor: { type: 'string', maxLength: 2048 },
} as const;

export { encodeCursor };

/** The value of a cursor, when `accept` recognizes it; 422 for anything else. */
export const decodeCursor = <T>(text: string, accept: (value: unknown) => value is T): T =>
  decodeAnyCursor(text, accept, 'is not a cursor of this listing');

/** Strings compared as DynamoDB orders sort keys: by their UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

// ---- Input --------------------------------------------------------------------------------------

export const listTasksSchema = {
  type: 'object',
  required: ['uid'],
  properties: {
    uid: ID_SCHEMA,
    q: { type: 'string', maxLength: 100 },
    department_id: ID_SCHEMA,
    status: { type: 'integer', enum: [0, 1, 2] },
    tag_id: ID_SCHEMA,
    ...pagingProperties,
  },
};

export interface ListTasksInput {
  uid: number;
  q?: string;
  department_id?: number;
  status?: 0 | 1 | 2;
  tag_id?: number;
  limit?: number;
  cursor?: string;
}

// ---- Order and filters (pure) --------------------------------------------------------------------

/**
 * A task's place in a listing: `p` 0 = found by its pinyin (gsi1), 1 = by its name only (gsi2); `k`
 * its listing key in that index.
 */
export interface Place {
  p: 0 | 1;
  k: string;
}

/** Where a task lists for the lower-cased query `lq` ('' = no query), or undefined when it does not match. */
export function placeOf(task: Pick<Task, 'id' | 'name' | 'pinyin'>, lq: string): Place | undefined {
  const pinyinKey = keys.taskListingSk(task.pinyin, task.id);
  if (!lq || task.pinyin.toLowerCase().startsWith(lq)) return { p: 0, k: pinyinKey };
  if (task.name.toLowerCase().startsWith(lq)) return { p: 1, k: keys.taskListingSk(task.name, task.id) };
  return undefined;
}

export function comparePlaces(a: Place, b: Place): number {
  return a.p - b.p || compareKeys(a.k, b.k);
}

/** The filters of a listing, other than the prefix (the repository's FilterExpression says the same). */
export function matchesFilter(task: Task, filter: listing.TaskFilter, now: number): boolean {
  if (filter.department_id !== undefined && task.department_id !== filter.department_id) return false;
  if (filter.tag_id !== undefined && !task.task_tags.includes(filter.tag_id)) return false;
  if (filter.status !== undefined && effectiveStatus(task, now) !== filter.status) return false;
  return true;
}

/**
 * A cursor of a listing for the query `lq`: a place whose key is a listing key in range, one DynamoDB
 * takes as a start key (well-formed text of at most 1,024 bytes, a task id of 12 digits).
 */
export function isCursorOf(lq: string) {
  return (v: unknown): v is Place => {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
    const { p, k } = v as Record<string, unknown>;
    if (p !== 0 && p !== 1) return false;
    if (typeof k !== 'string' || !/#\d{12}$/.test(k) || /\p{Cs}/u.test(k)) return false;
    if (Buffer.byteLength(k, 'utf8') > 1024) return false;
    return lq ? k.startsWith(lq) : p === 0;
  };
}

// ---- View -----------------------------------------------------------------------------------------

export type TaskAccess = 'admin' | 'rw' | 'ro';

interface Names {
  departments: Map<number, string>;
  tags: Map<number, string>;
}

/** The compact, readable view of a task in a listing: never its token, secret or receivers. */
export function taskSummary(task: Task, access: TaskAccess, names: Names, now: number): TaskSummary {
  const status = effectiveStatus(task, now);
  return {
    id: task.id,
    name: task.name,
    pinyin: task.pinyin,
    status,
    ...(status === TASK_PAUSED && task.paused_until !== undefined ? { paused_until: task.paused_until } : {}),
    department: { id: task.department_id, name: names.departments.get(task.department_id) ?? '' },
    tags: task.task_tags.map((id) => ({ id, name: names.tags.get(id) ?? '' })),
    created_by: task.created_by,
    created_at: task.created_at,
    updated_at: task.updated_at,
    access,
  };
}

// ---- Use case -------------------------------------------------------------------------------------

export const listDeps = {
  now: nowSeconds,
  loadReader,
  listPermissionsOfUser: repo.listPermissionsOfUser,
  getTasks: repo.getTasks,
  queryTaskListing: listing.queryTaskListing,
  getDepartments,
  getTags,
};
export type ListDeps = typeof listDeps;

/** Index Queries one request may make before it answers with what it found and a cursor. */
export const MAX_QUERIES = 10;

interface Found {
  task: Task;
  place: Place;
}

/** A page: at most `limit` tasks and, when more may follow, the place to continue after. */
interface Page {
  found: Found[];
  next?: Place;
}

/** The super administrator's listing: the index ranges of the query, phase by phase. */
async function pageFromIndex(
  lq: string,
  filter: listing.TaskFilter,
  limit: number,
  after: Place | undefined,
  now: number,
  deps: ListDeps,
): Promise<Page> {
  const found: Found[] = [];
  const filtered = Object.keys(filter).length > 0;
  let queries = 0;
  for (const phase of lq ? ([0, 1] as const) : ([0] as const)) {
    if (after && phase < after.p) continue;
    let from = after?.p === phase ? after.k : undefined;
    for (;;) {
      const page = await deps.queryTaskListing({
        index: phase === 0 ? 'gsi1' : 'gsi2',
        prefix: lq || undefined,
        after: from,
        filter,
        now,
        // Unfiltered pinyin ranges return what they read; filters and phase 1 skip some.
        evaluate: filtered || phase === 1 ? MAX_LIMIT : limit + 1 - found.length,
      });
      queries++;
      for (const { task, sk } of page.tasks) {
        // The same tests as the in-memory listing (and phase 1 skips what phase 0 listed).
        if (placeOf(task, lq)?.p !== phase || !matchesFilter(task, filter, now)) continue;
        found.push({ task, place: { p: phase, k: sk } });
        if (found.length > limit) return { found: found.slice(0, limit), next: found[limit - 1].place };
      }
      if (!page.last) break;
      from = page.last;
      if (queries >= MAX_QUERIES) return { found, next: { p: phase, k: page.last } };
    }
  }
  return { found };
}

/** Anyone else's listing: the tasks they hold a permission on, in the same order. */
function pageFromTasks(
  tasks: Task[],
  lq: string,
  filter: listing.TaskFilter,
  limit: number,
  after: Place | undefined,
  now: number,
): Page {
  const found = tasks
    .filter((t) => matchesFilter(t, filter, now))
    .flatMap((task) => {
      const place = placeOf(task, lq);
      return place && (!after || comparePlaces(place, after) > 0) ? [{ task, place }] : [];
    })
    .sort((a, b) => comparePlaces(a.place, b.place));
  return found.length > limit ? { found: found.slice(0, limit), next: found[limit - 1].place } : { found };
}

/**
 * GET /alarmtask/list. 404 for an unknown acting user; an empty list for a user without permissions.
 * A page may hold fewer than `limit` tasks while `next_cursor` is set (a selective filter over many
 * tasks stops after MAX_QUERIES index reads): follow the cursor until it is empty.
 */
export async function listTasks(input: ListTasksInput, deps: ListDeps = listDeps): Promise<TaskList> {
  const lq = (input.q ?? '').trim().toLowerCase();
  const limit = input.limit ?? DEFAULT_LIMIT;
  const after = input.cursor ? decodeCursor(input.cursor, isCursorOf(lq)) : undefined;
  const filter: listing.TaskFilter = {
    ...(input.department_id !== undefined ? { department_id: input.department_id } : {}),
    ...(input.status !== undefined ? { status: input.status } : {}),
    ...(input.tag_id !== undefined ? { tag_id: input.tag_id } : {}),
  };
  const now = deps.now();
  const reader = await deps.loadReader(input.uid);
  let page: Page;
  let access: (task: Task) => TaskAccess;
  if (reader.admin) {
    page = await pageFromIndex(lq, filter, limit, after, now, deps);
    access = () => 'admin';
  } else {
    const permissions = await deps.listPermissionsOfUser(input.uid);
    const held = new Map(permissions.map((p) => [p.task_id, p.access]));
    const tasks = held.size ? await deps.getTasks([...held.keys()]) : [];
    page = pageFromTasks(tasks, lq, filter, limit, after, now);
    access = (task) => held.get(task.id) ?? 'ro';
  }
  const names = await namesOf(
    page.found.map((f) => f.task),
    deps,
  );
  return {
    tasks: page.found.map(({ task }) => taskSummary(task, access(task), names, now)),
    next_cursor: page.next ? encodeCursor(page.next) : '',
  };
}

/** The names of the departments and tags a page shows (batched reads). */
async function namesOf(tasks: Task[], deps: ListDeps): Promise<Names> {
  const deptIds = [...new Set(tasks.map((t) => t.department_id))];
  const tagIds = [...new Set(tasks.flatMap((t) => t.task_tags))];
  const [departments, tags] = await Promise.all([
    deptIds.length ? deps.getDepartments(deptIds) : Promise.resolve([]),
    tagIds.length ? deps.getTags(tagIds) : Promise.resolve([]),
  ]);
  return {
    departments: new Map(departments.map((d) => [d.id, d.name])),
    tags: new Map(tags.map((t) => [t.id, t.name])),
  };
}

// ---- Maintenance ------------------------------------------------------------------------------------

/**
 * Gives the tasks stored before the listing existed their listing keys (AP-T15): a Scan for task
 * items without them, then a conditional update of each (re-read and retried when the task changed
 * meanwhile). Idempotent: a second run finds nothing to do. For `npm run admin -- backfill`.
 */
export async function backfillTaskIndex(
  deps = {
    scan: listing.scanTasksWithoutListing,
    setKeys: listing.setTaskListingKeys,
    getTask: repo.getTask,
  },
): Promise<{ scanned: number; updated: number }> {
  let scanned = 0;
  let updated = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.scan(start);
    scanned += page.scanned;
    for (const first of page.tasks) {
      let task: Task | undefined = first;
      for (let attempt = 0; task && attempt < 5; attempt++) {
        if (await deps.setKeys(task)) {
          updated++;
          break;
        }
        task = await deps.getTask(first.id, true);
      }
    }
    start = page.next;
  } while (start);
  return { scanned, updated };
}
