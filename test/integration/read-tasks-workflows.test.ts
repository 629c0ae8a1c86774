import { randomBytes } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { table } from '../../infra/definitions.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { backfillTaskIndex } from '../../shared/domain/tasks/list.ts';
import { backfillWorkflowIndex } from '../../shared/domain/workflows/list.ts';
import { countShardOf } from '../../shared/domain/workflows/repository.ts';
import { defaultDeps, finishWorkflowsOfMetric } from '../../shared/domain/workflows/service.ts';
import { ensureTable, localDynamoClient } from '../../shared/local/dynamo.ts';
import { api, serviceNow, taskAuth } from '../support/client.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { createWorkflowTask, loadTask, newWorkflow, operate } from '../support/workflows.ts';

/** Lower-case ASCII, unique to this run: every listing below is narrowed to this file's tasks by it. */
const P = `rtw${randomBytes(4).toString('hex')}`;

// biome-ignore lint/suspicious/noExplicitAny: response shapes under test
type Any = any;

const listTasks = (query: Record<string, string | number>) => api.get<Any>('/alarmtask/list', { query });
const ids = (res: { data: { tasks: { id: number }[] } }) => res.data.tasks.map((t) => t.id);

/** Every page of a listing, following its cursor; fails when a cursor repeats. */
async function allPages(
  path: string,
  field: 'tasks' | 'workflows',
  query: Record<string, string | number>,
): Promise<{ items: Any[]; pages: number }> {
  const items: Any[] = [];
  const seen = new Set<string>();
  let cursor = '';
  for (let pages = 1; ; pages++) {
    const res = await api.get<Any>(path, { query: { ...query, ...(cursor ? { cursor } : {}) } });
    expect(res.code).toBe(0);
    items.push(...res.data[field]);
    cursor = res.data.next_cursor;
    if (!cursor) return { items, pages };
    expect(seen.has(cursor)).toBe(false);
    seen.add(cursor);
    expect(pages).toBeLessThan(50);
  }
}

describe('GET /alarmtask/list', () => {
  let alpha: CreatedTask;
  let beta: CreatedTask;
  let gamma: CreatedTask;
  let hongyan: CreatedTask;
  let chongqing: CreatedTask;

  beforeAll(async () => {
    // Arrange: five tasks of three departments, two tags, three statuses, two Chinese names.
    alpha = await createTask({
      name: `${P}-alpha`,
      department_id: 1,
      task_tags: [1],
      permission: { rw: [], ro: [2] },
    });
    beta = await createTask({
      name: `${P.toUpperCase()}-Beta`,
      department_id: 3,
      task_tags: [2],
      permission: { rw: [4], ro: [] },
    });
    gamma = await createTask({
      name: `${P}-gamma`,
      department_id: 1,
      task_tags: [1],
      permission: { rw: [], ro: [2] },
    });
    hongyan = await createTask({
      name: `鸿雁${P}`,
      department_id: 2,
      task_tags: [1, 2],
      permission: { rw: [], ro: [2] },
    });
    chongqing = await createTask({ name: `重庆${P}`, department_id: 2 });
    expect((await api.put('/alarmtask/stop', await taskAuth(beta))).code).toBe(0);
    expect((await api.put('/alarmtask/pause', { ...(await taskAuth(hongyan)), time: 600 })).code).toBe(0);
    // A pause that has passed, not yet ended by the scheduled job: reads (and filters) as running.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(gamma.id),
        UpdateExpression: 'SET #s = :paused, paused_until = :past',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':paused': 2, ':past': (await serviceNow()) - 30 },
      }),
    );
  });

  it('lists every task for a super administrator, by pinyin, with the compact view', async () => {
    // Act
    const res = await listTasks({ uid: 1, q: P });
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0 });
    expect(ids(res)).toEqual([alpha.id, beta.id, gamma.id]);
    expect(res.data.next_cursor).toBe('');
    expect(res.data.tasks[0]).toEqual({
      id: alpha.id,
      name: `${P}-alpha`,
      pinyin: `${P}-alpha`,
      status: 1,
      department: { id: 1, name: 'Infra' },
      tags: [{ id: 1, name: 'payments' }],
      created_by: 1,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      access: 'admin',
    });
    expect(res.data.tasks.map((t: Any) => t.status)).toEqual([1, 0, 1]);
    const text = JSON.stringify(res.data);
    for (const t of [alpha, beta, gamma]) {
      expect(text).not.toContain(t.token);
      expect(text).not.toContain(t.secret);
    }
  });

  it('lists for any other user the tasks they hold a permission on, with their access', async () => {
    // Act
    const ro = await listTasks({ uid: 2, q: P });
    const rw = await listTasks({ uid: 4, q: P });
    const all = await allPages('/alarmtask/list', 'tasks', { uid: 2, limit: 100 });
    // Assert
    expect(ro.data.tasks.map((t: Any) => [t.id, t.access])).toEqual([
      [alpha.id, 'ro'],
      [gamma.id, 'ro'],
    ]);
    expect(rw.data.tasks.map((t: Any) => [t.id, t.access])).toEqual([[beta.id, 'rw']]);
    const mine = all.items.map((t) => t.id);
    expect(mine).toEqual(expect.arrayContaining([alpha.id, gamma.id, hongyan.id]));
    expect(mine).not.toContain(beta.id);
    expect(mine).not.toContain(chongqing.id);
  });

  it('gives a user without permissions an empty list and an unknown user 404', async () => {
    // Act
    const none = await listTasks({ uid: 5, q: P });
    const everything = await allPages('/alarmtask/list', 'tasks', { uid: 5, limit: 100 });
    const unknown = await listTasks({ uid: 987654 });
    // Assert
    expect(none).toMatchObject({ status: 200, code: 0, data: { tasks: [], next_cursor: '' } });
    const listed = everything.items.map((t) => t.id);
    for (const t of [alpha, beta, gamma, hongyan, chongqing]) expect(listed).not.toContain(t.id);
    expect(unknown).toMatchObject({ status: 404, code: 404, msg: 'user [987654] not found' });
  });

  it.each([
    ['a name prefix in another case', () => `${P.toUpperCase()}-B`, () => [beta.id]],
    ['a Chinese name prefix', () => `鸿雁${P}`, () => [hongyan.id]],
    ['a pinyin prefix', () => `hongyan${P}`, () => [hongyan.id]],
    ['a pinyin prefix in another case', () => `HongYan${P.toUpperCase()}`, () => [hongyan.id]],
    ['a polyphonic name prefix', () => `重庆${P}`, () => [chongqing.id]],
    ['its pinyin as read in the name', () => `chongqing${P}`, () => [chongqing.id]],
    ['another reading of the character', () => `zhongqing${P}`, () => []],
  ])('searches by %s', async (_label, q, expected) => {
    // Act
    const res = await listTasks({ uid: 1, q: q() });
    // Assert
    expect(ids(res)).toEqual(expected());
  });

  it('searches the tasks of a user with permissions by name and by pinyin alike', async () => {
    // Act
    const byName = await listTasks({ uid: 2, q: `鸿雁${P}` });
    const byPinyin = await listTasks({ uid: 2, q: `HONGYAN${P}` });
    const notHeld = await listTasks({ uid: 2, q: `重庆${P}` });
    // Assert
    expect(byName.data.tasks.map((t: Any) => [t.id, t.access])).toEqual([[hongyan.id, 'ro']]);
    expect(ids(byPinyin)).toEqual([hongyan.id]);
    expect(ids(notHeld)).toEqual([]);
  });

  it('finds a Chinese name by its first character among other tasks', async () => {
    // Act
    const res = await allPages('/alarmtask/list', 'tasks', { uid: 1, q: '鸿', limit: 100 });
    // Assert
    expect(res.items.map((t) => t.id)).toContain(hongyan.id);
    for (const t of res.items) expect(t.name.startsWith('鸿') || t.pinyin.startsWith('鸿')).toBe(true);
  });

  it.each([
    ['department', { department_id: 1 }, () => [alpha.id, gamma.id]],
    ['status stopped', { status: 0 }, () => [beta.id]],
    ['status running (a passed pause included)', { status: 1 }, () => [alpha.id, gamma.id]],
    ['status paused', { status: 2 }, () => []],
    ['tag', { tag_id: 2 }, () => [beta.id]],
    ['department and tag', { department_id: 3, tag_id: 1 }, () => []],
  ])('filters by %s (super administrator)', async (_label, filter, expected) => {
    // Act
    const res = await listTasks({ uid: 1, q: P, ...filter });
    // Assert
    expect(res.code).toBe(0);
    expect(ids(res)).toEqual(expected());
  });

  it('filters a paused task by status and tag, and shows until when it is paused', async () => {
    // Act
    const paused = await listTasks({ uid: 1, q: `鸿雁${P}`, status: 2, tag_id: 2 });
    const running = await listTasks({ uid: 1, q: `鸿雁${P}`, status: 1 });
    // Assert
    expect(ids(paused)).toEqual([hongyan.id]);
    expect(paused.data.tasks[0]).toMatchObject({
      status: 2,
      paused_until: expect.any(Number),
      department: { id: 2, name: '日志中心' },
      tags: [
        { id: 1, name: 'payments' },
        { id: 2, name: 'core' },
      ],
    });
    expect(ids(running)).toEqual([]);
  });

  it.each([
    ['status running', { status: 1 }, () => [alpha.id, gamma.id]],
    ['status paused', { status: 2 }, () => []],
    ['tag', { tag_id: 1 }, () => [alpha.id, gamma.id]],
    ['department', { department_id: 3 }, () => []],
  ])('filters by %s (a user with permissions)', async (_label, filter, expected) => {
    // Act
    const res = await listTasks({ uid: 2, q: P, ...filter });
    // Assert
    expect(ids(res)).toEqual(expected());
  });

  it('pages with the cursor, each task exactly once, in order (both listings)', async () => {
    // Act
    const admin = await allPages('/alarmtask/list', 'tasks', { uid: 1, q: P, limit: 1 });
    const user = await allPages('/alarmtask/list', 'tasks', { uid: 2, q: P, limit: 1 });
    const twoAtOnce = await allPages('/alarmtask/list', 'tasks', { uid: 1, q: P, limit: 2 });
    // Assert
    expect(admin.items.map((t) => t.id)).toEqual([alpha.id, beta.id, gamma.id]);
    expect(admin.pages).toBe(3);
    expect(user.items.map((t) => t.id)).toEqual([alpha.id, gamma.id]);
    expect(twoAtOnce.items.map((t) => t.id)).toEqual([alpha.id, beta.id, gamma.id]);
    expect(twoAtOnce.pages).toBe(2);
  });

  it.each([
    ['not base64url', () => '!!!'],
    ['not JSON', () => Buffer.from('nope').toString('base64url')],
    ['of another shape', () => Buffer.from(JSON.stringify({ u: '1' })).toString('base64url')],
    [
      'of another query',
      () => Buffer.from(JSON.stringify({ p: 0, k: `zzz#000000100001` })).toString('base64url'),
    ],
  ])('refuses a cursor %s with 422', async (_label, cursor) => {
    // Act
    const res = await listTasks({ uid: 1, q: P, cursor: cursor() });
    // Assert
    expect(res).toMatchObject({ status: 422, code: 422, msg: 'cursor is not a cursor of this listing' });
  });

  it.each([
    ['uid missing', {}, 'uid is required'],
    ['limit 0', { uid: 1, limit: 0 }, 'limit must be at least 1'],
    ['limit 101', { uid: 1, limit: 101 }, 'limit must be at most 100'],
    ['status 9', { uid: 1, status: 9 }, 'status must be one of 0, 1, 2'],
  ])('refuses %s with 422', async (_label, query, msg) => {
    // Act
    const res = await listTasks(query);
    // Assert
    expect(res).toMatchObject({ status: 422, code: 422, msg });
  });

  it('lists a renamed task under its new name only', async () => {
    // Arrange
    const t = await createTask({ name: `${P}-old` });
    const body = { ...(await taskAuth(t)), filter_fields: ['name'], name: `${P}-renamed` };
    expect((await api.put('/alarmtask/updatefields', body)).code).toBe(0);
    // Act
    const old = await listTasks({ uid: 1, q: `${P}-old` });
    const renamed = await listTasks({ uid: 1, q: `${P}-renamed` });
    // Assert
    expect(ids(old)).toEqual([]);
    expect(ids(renamed)).toEqual([t.id]);
  });

  it('backfills tasks stored without listing keys, once', async () => {
    // Arrange: a task as stored before the listing existed.
    const t = await createTask({ name: `${P}-legacy` });
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(t.id),
        UpdateExpression: 'REMOVE gsi1pk, gsi1sk, gsi2pk, gsi2sk',
      }),
    );
    const before = await listTasks({ uid: 1, q: `${P}-legacy` });
    // Act
    const first = await backfillTaskIndex();
    const second = await backfillTaskIndex();
    // Assert
    expect(ids(before)).toEqual([]);
    expect(first.updated).toBeGreaterThanOrEqual(1);
    expect(second.updated).toBe(0);
    expect(ids(await listTasks({ uid: 1, q: `${P}-legacy` }))).toEqual([t.id]);
  });
});

describe('GET /workflow/list and /workflow/counts', () => {
  let task: CreatedTask;
  let other: CreatedTask;
  let base: number;
  /** w[i] created at base + 10 i. */
  const w: number[] = [];
  const metric = `m${P}`.padEnd(40, '0');

  /** A workflow of `task` created at base + 10 i (the pipeline's createWorkflow with that clock). */
  async function workflowAt(i: number, on: { id: number } = task, history = {}) {
    const at = base + 10 * i;
    return (await newWorkflow(on, history, { ...defaultDeps, now: () => at })).id;
  }
  const ok = async (op: string, body: Record<string, unknown>) =>
    expect((await operate(op, body)).code).toBe(0);

  beforeAll(async () => {
    // Arrange: a task user 2 may read and one it may not; eight workflows in every status, owned by
    // several users, one finished by a recovery.
    task = await createWorkflowTask([], { permission: { rw: [], ro: [2] } });
    other = await createWorkflowTask();
    base = (await serviceNow()) - 100_000;
    for (let i = 0; i < 8; i++) w.push(await workflowAt(i, task, i === 7 ? { metric } : {}));
    await ok('claim', { ids: [w[1]], created_by: 2 });
    await ok('claim', { ids: [w[2]], created_by: 1 });
    await ok('assign', { ids: [w[3]], remark: 'yours', assignto: [4, 3], created_by: 1 });
    await ok('claim', { ids: [w[3]], created_by: 2 });
    await ok('claim', { ids: [w[4]] });
    await ok('processed', { ids: [w[4]], remark: 'fixed', created_by: 1 });
    await ok('claim', { ids: [w[5]], created_by: 2 });
    await ok('close', { ids: [w[5]], remark: 'noise' });
    await ok('assign', { ids: [w[6]], remark: 'look', assignto: [3] });
    await ok('claim', { ids: [w[6]], created_by: 2 });
    await ok('close', { ids: [w[6]], remark: 'noise' });
    await ok('reactive', { ids: [w[6]], remark: 'again' });
    expect(await finishWorkflowsOfMetric({ task: await loadTask(task.id), metric })).toEqual([w[7]]);
    const o = await workflowAt(0, other);
    await ok('close', { ids: [o], remark: 'noise' });
  });

  const list = (query: Record<string, string | number>) =>
    api.get<Any>('/workflow/list', { query: { uid: 1, task_id: task.id, ...query } });
  const wfIds = (res: { data: { workflows: { id: number }[] } }) => res.data.workflows.map((x) => x.id);

  it('lists a task’s workflows newest first, without pipeline records, with their owners', async () => {
    // Act
    const res = await list({});
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0 });
    expect(wfIds(res)).toEqual([...w].reverse());
    expect(res.data.next_cursor).toBe('');
    const byId = new Map(res.data.workflows.map((x: Any) => [x.id, x]));
    const w3 = byId.get(w[3]) as Any;
    expect(w3).toMatchObject({
      id: w[3],
      task_id: task.id,
      status: 1,
      created_at: base + 30,
      claimer: { uid: 2, username: '张三', user: 'zhangsan' },
      assignees: [{ uid: 4 }, { uid: 3, username: '吕布' }],
      task: { id: task.id, name: task.name, department_id: 1, department: { id: 1, name: 'Infra' } },
      history: { ctn: expect.any(String), uuid: expect.any(String) },
    });
    expect(w3).not.toHaveProperty('pipelines');
    expect(byId.get(w[0])).toMatchObject({ status: 0, claimer: null, assignees: [] });
    expect(byId.get(w[4])).toMatchObject({ status: 2, claimer: null });
    expect(byId.get(w[6])).toMatchObject({ status: 0, claimer: null, assignees: [{ uid: 3 }] });
    expect(byId.get(w[7])).toMatchObject({ status: 2 });
  });

  it.each([
    ['status pending', { status: 0 }, () => [w[6], w[0]]],
    ['status processing', { status: 1 }, () => [w[3], w[2], w[1]]],
    ['status done', { status: 2 }, () => [w[7], w[4]]],
    ['status closed', { status: 9 }, () => [w[5]]],
    ['claimer', { claimer: 2 }, () => [w[5], w[3], w[1]]],
    ['status and claimer', { status: 1, claimer: 2 }, () => [w[3], w[1]]],
    ['assignee', { assignee: 3 }, () => [w[6], w[3]]],
    ['another assignee', { assignee: 4 }, () => [w[3]]],
    ['time range', { from: 0, to: 0 }, () => []],
  ])('filters by %s', async (_label, query, expected) => {
    // Act
    const res = await list(query);
    // Assert
    expect(res.code).toBe(0);
    expect(wfIds(res)).toEqual(expected());
  });

  it('filters by a creation time range, both ends included', async () => {
    // Act
    const res = await list({ from: base + 10, to: base + 30 });
    const open = await list({ from: base + 60 });
    const upTo = await list({ to: base + 5 });
    // Assert
    expect(wfIds(res)).toEqual([w[3], w[2], w[1]]);
    expect(wfIds(open)).toEqual([w[7], w[6]]);
    expect(wfIds(upTo)).toEqual([w[0]]);
  });

  it('pages with the cursor, each workflow exactly once, newest first', async () => {
    // Act
    const all = await allPages('/workflow/list', 'workflows', { uid: 1, task_id: task.id, limit: 3 });
    const byOne = await allPages('/workflow/list', 'workflows', {
      uid: 2,
      task_id: task.id,
      claimer: 2,
      limit: 1,
    });
    const inRange = await allPages('/workflow/list', 'workflows', {
      uid: 1,
      task_id: task.id,
      status: 1,
      from: base + 20,
      limit: 1,
    });
    // Assert
    expect(all.items.map((x) => x.id)).toEqual([...w].reverse());
    expect(all.pages).toBe(3);
    expect(byOne.items.map((x) => x.id)).toEqual([w[5], w[3], w[1]]);
    expect(inRange.items.map((x) => x.id)).toEqual([w[3], w[2]]);
  });

  it('refuses a user without permission (403), an unknown task or user (404), a bad cursor (422)', async () => {
    // Act
    const denied = await list({ uid: 5 });
    const noTask = await list({ task_id: 987654321 });
    const noUser = await list({ uid: 987654 });
    const badCursor = await list({ cursor: Buffer.from('{"u":"x"}').toString('base64url') });
    const badRange = await list({ from: 10, to: 5 });
    // Assert
    expect(denied).toMatchObject({
      status: 403,
      code: 403,
      msg: `user [5] has no permission on task [${task.id}]`,
    });
    expect(noTask).toMatchObject({ status: 404, code: 404, msg: 'task [987654321] not found' });
    expect(noUser).toMatchObject({ status: 404, code: 404, msg: 'user [987654] not found' });
    expect(badCursor).toMatchObject({ status: 422, msg: 'cursor is not a cursor of this listing' });
    expect(badRange).toMatchObject({ status: 422, msg: 'to must not be before from' });
  });

  const counts = (query: Record<string, string | number>) => api.get<Any>('/workflow/counts', { query });

  it('counts workflows by status per task, in the order asked', async () => {
    // Act
    const one = await counts({ uid: 2, task_id: task.id });
    const two = await counts({ uid: 1, task_ids: `${other.id},${task.id}` });
    // Assert
    const expected = { task_id: task.id, pending: 2, processing: 3, done: 2, closed: 1, total: 8 };
    expect(one).toMatchObject({ status: 200, code: 0, data: { counts: [expected] } });
    expect(two.data.counts).toEqual([
      { task_id: other.id, pending: 0, processing: 0, done: 0, closed: 1, total: 1 },
      expected,
    ]);
  });

  it('counts agree with the listing', async () => {
    // Act
    const [c, ...byStatus] = await Promise.all([
      counts({ uid: 1, task_id: task.id }),
      ...[0, 1, 2, 9].map((status) => list({ status, limit: 100 })),
    ]);
    // Assert
    const [pending, processing, done, closed] = byStatus.map((r) => r.data.workflows.length);
    expect(c.data.counts[0]).toMatchObject({ pending, processing, done, closed });
  });

  it('refuses counts of a task the user may not read (403), unknown tasks (404), bad lists (422)', async () => {
    // Act
    const denied = await counts({ uid: 2, task_ids: `${task.id},${other.id}` });
    const unknown = await counts({ uid: 1, task_ids: `${task.id},987654321,987654322` });
    const neither = await counts({ uid: 1 });
    const both = await counts({ uid: 1, task_id: task.id, task_ids: String(task.id) });
    const malformed = await counts({ uid: 1, task_ids: `${task.id},,x` });
    const tooMany = await counts({
      uid: 1,
      task_ids: Array.from({ length: 101 }, (_, i) => 100001 + i).join(','),
    });
    // Assert
    expect(denied).toMatchObject({ status: 403, msg: `user [2] has no permission on task [${other.id}]` });
    expect(unknown).toMatchObject({ status: 404, msg: 'task [987654321, 987654322] not found' });
    expect(neither).toMatchObject({ status: 422, msg: 'task_id is required (or task_ids)' });
    expect(both).toMatchObject({ status: 422, msg: 'task_ids must not be given with task_id' });
    expect(malformed).toMatchObject({ status: 422, msg: 'task_ids must be task ids separated by commas' });
    expect(tooMany).toMatchObject({ status: 422, msg: 'task_ids must name at most 100 tasks' });
  });

  it('backfills workflows stored before the listing and counts, once; their operations meanwhile do not move counts', async () => {
    // Arrange: a task with a claimed workflow, turned into one stored before (no listing entry,
    // owners or `counted`, and not in the counts), then closed before the backfill.
    const t = await createWorkflowTask([], { permission: { rw: [], ro: [2] } });
    const id = await workflowAt(0, t);
    await ok('claim', { ids: [id], created_by: 2 });
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.workflow(id),
        UpdateExpression: 'REMOVE gsi2pk, gsi2sk, claimer, #c',
        ExpressionAttributeNames: { '#c': 'counted' },
      }),
    );
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.workflowCount(t.id, countShardOf(id)),
        UpdateExpression: 'ADD processing :minus',
        ExpressionAttributeValues: { ':minus': -1 },
      }),
    );
    await ok('close', { ids: [id], remark: 'noise' });
    const before = await counts({ uid: 1, task_id: t.id });
    const listedBefore = await api.get<Any>('/workflow/list', { query: { uid: 1, task_id: t.id } });
    // Act
    const first = await backfillWorkflowIndex();
    const second = await backfillWorkflowIndex();
    // Assert
    expect(before.data.counts[0]).toMatchObject({ processing: 0, closed: 0, total: 0 });
    expect(wfIds(listedBefore)).toEqual([]);
    expect(first.counted).toBeGreaterThanOrEqual(1);
    expect(second.counted).toBe(0);
    const after = await counts({ uid: 1, task_id: t.id });
    expect(after.data.counts[0]).toMatchObject({ processing: 0, closed: 1, total: 1 });
    const listed = await api.get<Any>('/workflow/list', { query: { uid: 1, task_id: t.id, claimer: 2 } });
    expect(listed.data.workflows.map((x: Any) => [x.id, x.status, x.claimer?.uid])).toEqual([[id, 9, 2]]);
    // Its next operation moves it between counts like any other.
    await ok('reactive', { ids: [id], remark: 'again' });
    expect((await counts({ uid: 1, task_id: t.id })).data.counts[0]).toMatchObject({ pending: 1, closed: 0 });
  });
});

describe('hostile input to the read routes', () => {
  const hostile = [
    '',
    '0',
    '-1',
    '1.5',
    '1e20',
    '9007199254740993',
    'x',
    '\u0000',
    '%',
    '#',
    '~'.repeat(2049),
    '日'.repeat(101),
    '\ud800',
    '[]',
    '{"p":0}',
    Buffer.from(JSON.stringify({ p: 0, k: '#000000000001' })).toString('base64url'),
    Buffer.from(JSON.stringify({ p: 1, k: `${'a'.repeat(1099)}#000000000001` })).toString('base64url'),
    Buffer.from(JSON.stringify({ u: '0000000000#000000000000' })).toString('base64url'),
    Buffer.from(JSON.stringify({ u: '9999999999#999999999999' })).toString('base64url'),
  ];
  const routes: [string, Record<string, string>][] = [
    ['/alarmtask/list', { uid: '1', q: 'a' }],
    ['/workflow/list', { uid: '1', task_id: '100001' }],
    ['/workflow/counts', { uid: '1', task_ids: '100001' }],
  ];

  it.each(routes)('%s answers every hostile value with an envelope, never a 5xx', async (path, valid) => {
    // Arrange
    const fields = [
      ...Object.keys(valid),
      'q',
      'cursor',
      'limit',
      'status',
      'from',
      'to',
      'claimer',
      'task_ids',
    ];
    const problems: string[] = [];
    // Act
    for (const field of new Set(fields)) {
      for (const value of hostile) {
        const res = await api.get<Any>(path, { query: { ...valid, [field]: value } });
        if (res.status >= 500 || typeof res.code !== 'number' || typeof res.msg !== 'string')
          problems.push(`${field}=${JSON.stringify(value).slice(0, 40)}: ${res.status} ${res.msg}`);
      }
    }
    // Assert
    expect(problems).toEqual([]);
  });
});

describe('the local table gains a missing index', () => {
  const name = `gsi-migration-${randomBytes(4).toString('hex')}`;
  const client = localDynamoClient(inject('stack').dynamoEndpoint, inject('stack').region);

  afterAll(async () => {
    await client.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined);
    client.destroy();
  });

  it('adds gsi2 to a table persisted with gsi1 only, filled from its items', async () => {
    // Arrange: the table as an earlier version created it, with an item that has gsi2 keys.
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: ['pk', 'sk', 'gsi1pk', 'gsi1sk'].map((a) => ({
          AttributeName: a,
          AttributeType: 'S',
        })),
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'gsi1',
            KeySchema: [
              { AttributeName: 'gsi1pk', KeyType: 'HASH' },
              { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );
    await db().send(
      new PutCommand({ TableName: name, Item: { pk: 'A', sk: 'B', gsi2pk: 'LISTED', gsi2sk: '1', x: 1 } }),
    );
    // Act
    await ensureTable(client, name);
    // Assert
    const described = await client.send(new DescribeTableCommand({ TableName: name }));
    expect(described.Table?.GlobalSecondaryIndexes?.map((g) => g.IndexName).sort()).toEqual(
      table.globalSecondaryIndexes.map((g) => g.indexName).sort(),
    );
    const found = await db().send(
      new QueryCommand({
        TableName: name,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :p',
        ExpressionAttributeValues: { ':p': 'LISTED' },
      }),
    );
    expect(found.Items).toEqual([{ pk: 'A', sk: 'B', gsi2pk: 'LISTED', gsi2sk: '1', x: 1 }]);
    // An item written after the change is indexed too: DynamoDB Local's writes see the new description
    // at once (its launcher keeps parsed descriptions by their bytes: dynamo/TableDescriptionMemo.java).
    await db().send(
      new PutCommand({ TableName: name, Item: { pk: 'C', sk: 'D', gsi2pk: 'LISTED', gsi2sk: '2' } }),
    );
    const after = await db().send(
      new QueryCommand({
        TableName: name,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :p',
        ExpressionAttributeValues: { ':p': 'LISTED' },
      }),
    );
    expect(after.Items?.map((i) => i.pk)).toEqual(['A', 'C']);
  });
});
