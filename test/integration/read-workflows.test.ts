import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { backfillWorkflowIndex } from '../../shared/domain/workflows/list.ts';
import { countShardOf } from '../../shared/domain/workflows/repository-counts.ts';
import { finishWorkflowsOfMetric } from '../../shared/domain/workflows/service.ts';
import { defaultDeps } from '../../shared/domain/workflows/workflow-deps.ts';
import { api, serviceNow } from '../support/client.ts';
import type { CreatedTask } from '../support/tasks.ts';
import { createWorkflowTask, loadTask, newWorkflow, operate } from '../support/workflows.ts';
import { allPages, type Any } from '../support/pages.ts';

/** Lower-case ASCII, unique to this run: every listing below is narrowed to this file's tasks by it. */
const P = `rtw${randomBytes(4).toString('hex')}`;

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
    task = await createWorkflowTask([], { permission: { rw: [2], ro: [] } });
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
    const t = await createWorkflowTask([], { permission: { rw: [2], ro: [] } });
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
