import { describe, expect, it } from 'vitest';
import type { Department, Tag, User } from '../directory/model.ts';
import type { Task } from './model.ts';
import {
  compareKeys,
  decodeCursor,
  encodeCursor,
  isCursorOf,
  type ListDeps,
  listTasks,
  matchesFilter,
  type Place,
  placeOf,
} from './list.ts';
import type { PermissionItem } from './repository.ts';
import type { ListedTask, TaskFilter } from './repository-listing.ts';

const NOW = 1_700_000_000;

function task(id: number, name: string, pinyin: string, extra: Partial<Task> = {}): Task {
  return {
    id,
    name,
    pinyin,
    department_id: 1,
    task_tags: [],
    status: 1,
    created_by: 1,
    created_at: NOW - 100,
    updated_at: NOW - 50,
    version: 1,
    token: `token-${id}`,
    secret: `secret-${id}`,
    ...extra,
  } as Task;
}

const key = (text: string, id: number) => `${text.toLowerCase()}#${String(id).padStart(12, '0')}`;

describe('cursors', () => {
  it('round-trips a value through base64url JSON', () => {
    // Arrange
    const place: Place = { p: 1, k: key('日志', 100001) };
    // Act
    const text = encodeCursor(place);
    // Assert
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(text, isCursorOf('日'))).toEqual(place);
  });

  it.each([
    ['empty', ''],
    ['not base64url', 'a+b/c='],
    ['not JSON', Buffer.from('{p:0').toString('base64url')],
    ['JSON null', Buffer.from('null').toString('base64url')],
    ['a wrong phase', encodeCursor({ p: 2, k: key('a', 1) })],
    ['a key without an id', encodeCursor({ p: 0, k: 'abc' })],
    ['a number as key', encodeCursor({ p: 0, k: 5 })],
    ['a name phase without a query', encodeCursor({ p: 1, k: key('a', 1) })],
    ['an array', encodeCursor([0, key('a', 1)])],
    ['a lone surrogate in the key', encodeCursor({ p: 0, k: key('a\ud800', 1) })],
    ['a key longer than DynamoDB takes', encodeCursor({ p: 0, k: key('日'.repeat(400), 1) })],
  ])('refuses %s with 422 on cursor', (_label, text) => {
    // Act
    const act = () => decodeCursor(text, isCursorOf(''));
    // Assert
    expect(act).toThrow(
      expect.objectContaining({ status: 422, message: 'cursor is not a cursor of this listing' }),
    );
  });

  it('refuses a key outside the query range', () => {
    // Arrange
    const text = encodeCursor({ p: 0, k: key('beta', 7) });
    // Act / Assert
    expect(() => decodeCursor(text, isCursorOf('al'))).toThrow(expect.objectContaining({ status: 422 }));
    expect(decodeCursor(text, isCursorOf('be'))).toEqual({ p: 0, k: key('beta', 7) });
  });
});

describe('placeOf', () => {
  const t = task(100001, '重庆Ops', 'chongqingOps');
  it.each([
    ['no query', '', { p: 0, k: key('chongqingOps', 100001) }],
    ['a pinyin prefix', 'chongq', { p: 0, k: key('chongqingOps', 100001) }],
    ['the whole pinyin, any case', 'chongqingops', { p: 0, k: key('chongqingOps', 100001) }],
    ['a name prefix', '重庆', { p: 1, k: key('重庆Ops', 100001) }],
    ['a name prefix in another case', '重庆o', { p: 1, k: key('重庆Ops', 100001) }],
    ['another reading', 'zhong', undefined],
    ['a middle part', 'qing', undefined],
  ])('places a task for %s', (_label, lq, expected) => {
    // Act / Assert
    expect(placeOf(t, lq)).toEqual(expected);
  });
});

describe('compareKeys', () => {
  it('orders as DynamoDB does, by UTF-8 bytes (not UTF-16 code units)', () => {
    // Arrange: U+FF21 (3 UTF-8 bytes) sorts before U+1F600 (4 bytes, a surrogate pair in UTF-16).
    const a = '\uFF21';
    const b = '😀';
    // Act / Assert
    expect(a < b).toBe(false);
    expect(compareKeys(a, b)).toBeLessThan(0);
    expect(compareKeys('a#1', 'a#1')).toBe(0);
  });
});

describe('matchesFilter', () => {
  const t = task(1, 'a', 'a', { department_id: 3, task_tags: [5, 6] });
  it.each<[string, Partial<Task>, TaskFilter, boolean]>([
    ['no filter', {}, {}, true],
    ['its department', {}, { department_id: 3 }, true],
    ['another department', {}, { department_id: 4 }, false],
    ['one of its tags', {}, { tag_id: 6 }, true],
    ['another tag', {}, { tag_id: 7 }, false],
    ['running', {}, { status: 1 }, true],
    ['stopped', { status: 0 }, { status: 0 }, true],
    ['a running task as paused', {}, { status: 2 }, false],
    ['a pause that has passed as running', { status: 2, paused_until: NOW }, { status: 1 }, true],
    ['a pause that has passed as paused', { status: 2, paused_until: NOW }, { status: 2 }, false],
    ['a pause still on as paused', { status: 2, paused_until: NOW + 1 }, { status: 2 }, true],
    ['all filters', {}, { department_id: 3, tag_id: 5, status: 1 }, true],
  ])('matches %s', (_label, change, filter, expected) => {
    // Act / Assert
    expect(matchesFilter({ ...t, ...change } as Task, filter, NOW)).toBe(expected);
  });
});

/** Deps over an in-memory table of tasks: the index Query mimicked with pages of `evaluate` items. */
function fakeDeps(tasks: Task[], opts: { admin: boolean; permissions?: PermissionItem[] }) {
  const queries: { index: string; after?: string }[] = [];
  const deps: ListDeps = {
    now: () => NOW,
    loadReader: async (uid: number) => ({
      user: { uid, role: opts.admin ? 9 : 0 } as User,
      admin: opts.admin,
    }),
    listPermissionsOfUser: async () => opts.permissions ?? [],
    getTasks: async (ids: number[]) => tasks.filter((t) => ids.includes(t.id)),
    queryTaskListing: async ({ index, prefix, after, filter, now, evaluate }) => {
      queries.push({ index, after });
      const keyed: ListedTask[] = tasks
        .map((t) => ({ task: t, sk: key(index === 'gsi1' ? t.pinyin : t.name, t.id) }))
        .filter((l) => !prefix || l.sk.startsWith(prefix))
        .sort((a, b) => compareKeys(a.sk, b.sk));
      const start = after ? keyed.findIndex((l) => compareKeys(l.sk, after) > 0) : 0;
      const read = start < 0 ? [] : keyed.slice(start, start + evaluate);
      const more = start >= 0 && start + evaluate < keyed.length;
      return {
        tasks: read.filter((l) => matchesFilter(l.task, filter, now)),
        last: more ? read[read.length - 1].sk : undefined,
      };
    },
    getDepartments: async (ids: number[]) => ids.map((id) => ({ id, name: `dept ${id}` }) as Department),
    getTags: async (ids: number[]) => ids.map((id) => ({ id, name: `tag ${id}` }) as Tag),
  };
  return { deps, queries };
}

const TASKS = [
  task(11, 'Hong Kong', 'Hong Kong'),
  task(12, '鸿雁', 'hongyan'),
  task(13, '红旗', 'hongqi', { department_id: 2 }),
  task(14, '鸿鹄', 'honghu'),
  task(15, 'alpha', 'alpha'),
];

async function everyPage(deps: ListDeps, input: Record<string, unknown>) {
  const pages: number[][] = [];
  let cursor: string | undefined;
  do {
    const page = await listTasks({ uid: 1, ...input, ...(cursor ? { cursor } : {}) }, deps);
    pages.push(page.tasks.map((t) => t.id));
    cursor = page.next_cursor || undefined;
  } while (cursor && pages.length < 20);
  return pages;
}

describe('listTasks', () => {
  it('lists pinyin matches, then name-only matches, across phases with the cursor', async () => {
    // Arrange: q "hong" matches four pinyins ("hong kong" first: a space sorts before letters); "鸿"
    // matches two names only.
    const { deps } = fakeDeps(TASKS, { admin: true });
    // Act
    const byPinyin = await everyPage(deps, { q: 'HONG', limit: 3 });
    const byName = await everyPage(deps, { q: '鸿', limit: 1 });
    // Assert
    expect(byPinyin).toEqual([[11, 14, 13], [12]]);
    expect(byName).toEqual([[12], [14]]);
  });

  it('pages a user’s tasks in the order of the administrator’s listing', async () => {
    // Arrange
    const permissions = TASKS.map(
      (t) => ({ task_id: t.id, uid: 2, access: t.id === 13 ? 'rw' : 'ro' }) as const,
    );
    const admin = fakeDeps(TASKS, { admin: true }).deps;
    const user = fakeDeps(TASKS, { admin: false, permissions }).deps;
    // Act
    const a = await everyPage(admin, { limit: 2 });
    const u = await everyPage(user, { limit: 2 });
    const first = await listTasks({ uid: 2, limit: 5 }, user);
    // Assert
    expect(a.flat()).toEqual([15, 11, 14, 13, 12]);
    expect(u).toEqual(a);
    expect(first.tasks.map((t) => [t.id, t.access])).toEqual([
      [15, 'ro'],
      [11, 'ro'],
      [14, 'ro'],
      [13, 'rw'],
      [12, 'ro'],
    ]);
  });

  it('answers a selective filter page by page within its budget of queries', async () => {
    // Arrange: 300 tasks, only the last in department 2.
    const many = Array.from({ length: 300 }, (_, i) =>
      task(1000 + i, `t${String(i).padStart(3, '0')}`, `t${String(i).padStart(3, '0')}`, {
        department_id: i === 299 ? 2 : 1,
      }),
    );
    const { deps, queries } = fakeDeps(many, { admin: true });
    // Act
    const first = await listTasks({ uid: 1, department_id: 2, limit: 1 }, deps);
    const rest = await everyPage(deps, { department_id: 2, limit: 1 });
    // Assert: 300 items at 100 per query fit in the budget of 10.
    expect(first.tasks.map((t) => t.id)).toEqual([1299]);
    expect(first.next_cursor).toBe('');
    expect(rest.flat()).toEqual([1299]);
    expect(queries.length).toBeLessThanOrEqual(2 * 3);
  });

  it('stops after its budget with fewer tasks and a cursor that resumes where it stopped', async () => {
    // Arrange: 1,200 tasks, none in department 2 but the last one.
    const many = Array.from({ length: 1200 }, (_, i) =>
      task(5000 + i, `n${String(i).padStart(4, '0')}`, `n${String(i).padStart(4, '0')}`, {
        department_id: i === 1199 ? 2 : 1,
      }),
    );
    const { deps } = fakeDeps(many, { admin: true });
    // Act
    const first = await listTasks({ uid: 1, department_id: 2 }, deps);
    const pages = await everyPage(deps, { department_id: 2 });
    // Assert
    expect(first.tasks).toEqual([]);
    expect(first.next_cursor).not.toBe('');
    expect(pages).toEqual([[], [6199]]);
  });

  it('shows the compact view: effective status, names of department and tags, never credentials', async () => {
    // Arrange
    const paused = task(21, 'p', 'p', {
      status: 2,
      paused_until: NOW + 60,
      department_id: 7,
      task_tags: [3],
    });
    const passed = task(22, 'q', 'q', { status: 2, paused_until: NOW - 1 });
    const { deps } = fakeDeps([paused, passed], { admin: true });
    // Act
    const res = await listTasks({ uid: 1 }, deps);
    // Assert
    expect(res.tasks[0]).toEqual({
      id: 21,
      name: 'p',
      pinyin: 'p',
      status: 2,
      paused_until: NOW + 60,
      department: { id: 7, name: 'dept 7' },
      tags: [{ id: 3, name: 'tag 3' }],
      created_by: 1,
      created_at: NOW - 100,
      updated_at: NOW - 50,
      access: 'admin',
    });
    expect(res.tasks[1]).toMatchObject({ id: 22, status: 1 });
    expect(res.tasks[1]).not.toHaveProperty('paused_until');
    expect(JSON.stringify(res)).not.toMatch(/token|secret/);
  });
});
