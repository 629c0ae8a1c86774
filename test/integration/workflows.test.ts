import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { permissionItem } from '../../shared/domain/tasks/repository.ts';
import { finishWorkflowsOfMetric } from '../../shared/domain/workflows/service.ts';
import type { CreatedTask } from '../support/tasks.ts';
import {
  createWorkflowTask,
  loadTask,
  newWorkflow,
  operate,
  pipelineStatuses,
  showWorkflow,
  syncClock,
} from '../support/workflows.ts';
import { api } from '../support/client.ts';

let task: CreatedTask;
let other: CreatedTask;

beforeAll(async () => {
  // Arrange: a task user 2 may operate (rw), and another task user 2 has nothing on.
  task = await createWorkflowTask([], { permission: { rw: [2], ro: [] } });
  other = await createWorkflowTask();
});

/** Brings a fresh workflow to a status through the API (the application acts). */
async function workflowIn(status: 0 | 1 | 2 | 9, on: { id: number } = task): Promise<number> {
  const { id } = await newWorkflow(on);
  if (status === 1 || status === 2) expect((await operate('claim', { ids: [id] })).code).toBe(0);
  if (status === 2)
    expect((await operate('processed', { ids: [id], remark: 'done', created_by: 1 })).code).toBe(0);
  if (status === 9) expect((await operate('close', { ids: [id], remark: 'no' })).code).toBe(0);
  return id;
}

const BODY: Record<string, Record<string, unknown>> = {
  claim: {},
  assign: { remark: 'over to you', assignto: [4] },
  processed: { remark: 'fixed', created_by: 1 },
  reactive: { remark: 'again' },
  close: { remark: 'noise' },
};

describe('workflow state table (API guide §10.2)', () => {
  const allowed: [string, number, number, number][] = [
    // op, from, to, pipeline status
    ['claim', 0, 1, 1],
    ['assign', 0, 0, 4],
    ['assign', 1, 1, 4],
    ['processed', 1, 2, 2],
    ['reactive', 9, 0, 5],
    ['close', 0, 9, 9],
    ['close', 1, 9, 9],
  ];
  it.each(allowed)('%s from %i -> %i with a pipeline record %i', async (op, from, to, pipe) => {
    // Arrange
    const id = await workflowIn(from as 0 | 1 | 2 | 9);
    const before = await pipelineStatuses(id);
    // Act
    const res = await operate(op, { ids: [id], ...BODY[op] });
    // Assert
    expect(res).toMatchObject({
      status: 200,
      code: 0,
      msg: 'success',
      data: { workflows: [{ id, status: to }] },
    });
    const wf = await showWorkflow(id);
    expect(wf.status).toBe(to);
    expect(wf.pipelines.map((p: { status: number }) => p.status)).toEqual([...before, pipe]);
  });

  const refused: [string, number, string][] = [
    ['claim', 1, 'is processing, only pending workflows can be claimed'],
    ['claim', 2, 'is done, only pending workflows can be claimed'],
    ['claim', 9, 'is closed, only pending workflows can be claimed'],
    ['assign', 2, 'is done, only pending or processing workflows can be assigned'],
    ['assign', 9, 'is closed, only pending or processing workflows can be assigned'],
    ['processed', 0, 'is pending, only processing workflows can be processed'],
    ['processed', 2, 'is done, only processing workflows can be processed'],
    ['processed', 9, 'is closed, only processing workflows can be processed'],
    ['reactive', 0, 'is pending, only closed workflows can be reactivated'],
    ['reactive', 1, 'is processing, only closed workflows can be reactivated'],
    ['reactive', 2, 'is done, only closed workflows can be reactivated'],
    ['close', 2, 'is done, only pending or processing workflows can be closed'],
    ['close', 9, 'is closed, only pending or processing workflows can be closed'],
  ];
  it.each(refused)('%s from %i is refused with 409', async (op, from, text) => {
    // Arrange
    const id = await workflowIn(from as 0 | 1 | 2 | 9);
    const before = await showWorkflow(id);
    // Act
    const res = await operate(op, { ids: [id], ...BODY[op] });
    // Assert
    expect(res).toMatchObject({ status: 409, code: 409, msg: `workflow [${id}] ${text}` });
    expect(await showWorkflow(id)).toEqual(before);
  });
});

describe('batches', () => {
  it('changes nothing when one workflow of the batch is in a wrong state', async () => {
    // Arrange
    const a = await workflowIn(0);
    const b = await workflowIn(9);
    const c = await workflowIn(0);
    // Act
    const res = await operate('claim', { ids: [a, b, c] });
    // Assert
    expect(res).toMatchObject({
      status: 409,
      msg: `workflow [${b}] is closed, only pending workflows can be claimed`,
    });
    expect((await showWorkflow(a)).status).toBe(0);
    expect((await showWorkflow(c)).status).toBe(0);
    expect(await pipelineStatuses(a)).toEqual([0]);
  });

  it('operates on every workflow of a batch and answers each new status in order', async () => {
    const ids = [await workflowIn(1), await workflowIn(0), await workflowIn(1)];
    const res = await operate('close', { ids, remark: 'bulk' });
    expect(res.data.workflows).toEqual(ids.map((id) => ({ id, status: 9 })));
    for (const id of ids) expect((await showWorkflow(id)).status).toBe(9);
  });

  it('answers 404 naming every missing id, and changes nothing', async () => {
    const a = await workflowIn(0);
    const res = await operate('claim', { ids: [a, 999_999_001, 999_999_002] });
    expect(res).toMatchObject({ status: 404, code: 404, msg: 'workflow [999999001, 999999002] not found' });
    expect((await showWorkflow(a)).status).toBe(0);
  });

  it('accepts 49 ids and refuses 50 with 422', async () => {
    const ids = await Promise.all(Array.from({ length: 49 }, () => workflowIn(0)));
    const tooMany = await operate('claim', { ids: [...ids, 999_999_003] });
    const ok = await operate('claim', { ids });
    expect(tooMany).toMatchObject({ status: 422, msg: 'ids must have at most 49 items' });
    expect(ok.code).toBe(0);
    expect(ok.data.workflows).toHaveLength(49);
    expect(ok.data.workflows.every((w: { status: number }) => w.status === 1)).toBe(true);
  });
});

describe('validation (422)', () => {
  const cases: [string, string, Record<string, unknown>, string][] = [
    ['claim', 'ids missing', {}, 'ids is required'],
    ['claim', 'ids empty', { ids: [] }, 'ids must not be empty'],
    ['claim', 'ids not integers', { ids: ['1'] }, 'ids.0 must be an integer'],
    ['claim', 'ids not positive', { ids: [0] }, 'ids.0 must be at least 1'],
    [
      'claim',
      'remark too long',
      { ids: [1], remark: 'x'.repeat(201) },
      'remark must be at most 200 characters',
    ],
    ['assign', 'remark missing', { ids: [1], assignto: [2] }, 'remark is required'],
    ['assign', 'assignto missing', { ids: [1], remark: 'r' }, 'assignto is required'],
    ['assign', 'assignto empty', { ids: [1], remark: 'r', assignto: [] }, 'assignto must not be empty'],
    [
      'assign',
      'assignto repeats',
      { ids: [1], remark: 'r', assignto: [2, 3, 2] },
      'assignto must be distinct, repeated: [2]',
    ],
    ['processed', 'created_by missing', { ids: [1], remark: 'r' }, 'created_by is required'],
    ['processed', 'remark empty', { ids: [1], remark: '', created_by: 1 }, 'remark must not be empty'],
    ['reactive', 'remark missing', { ids: [1] }, 'remark is required'],
    ['close', 'remark missing', { ids: [1] }, 'remark is required'],
    [
      'close',
      'created_by not an integer',
      { ids: [1], remark: 'r', created_by: '1' },
      'created_by must be an integer',
    ],
  ];
  it.each(cases)('%s: %s', async (op, _name, body, msg) => {
    const res = await operate(op, body);
    expect(res).toMatchObject({ status: 422, code: 422, msg });
    expect(res.data.errors[0].message).toBeTypeOf('string');
  });

  it('names repeated ids and changes nothing', async () => {
    const a = await workflowIn(0);
    const b = await workflowIn(0);
    const res = await operate('claim', { ids: [a, b, a, b, a] });
    expect(res).toMatchObject({ status: 422, msg: `ids must be distinct, repeated: [${a}, ${b}]` });
    expect(res.data.errors).toEqual([{ field: 'ids', message: `must be distinct, repeated: [${a}, ${b}]` }]);
    expect((await showWorkflow(a)).status).toBe(0);
  });

  it('refuses a body that is not JSON with 400', async () => {
    const res = await api.put('/workflow/claim', undefined, {
      body: '{',
      headers: { 'content-type': 'application/json' },
    });
    expect(res).toMatchObject({ status: 400, code: 400 });
  });
});

describe('acting users', () => {
  it('404 for an unknown created_by or assignee, nothing changed', async () => {
    const id = await workflowIn(0);
    const unknownActor = await operate('claim', { ids: [id], created_by: 777 });
    const unknownAssignees = await operate('assign', { ids: [id], remark: 'r', assignto: [2, 778, 779] });
    expect(unknownActor).toMatchObject({ status: 404, msg: 'user [777] not found' });
    expect(unknownAssignees).toMatchObject({ status: 404, msg: 'user [778, 779] not found' });
    expect(await pipelineStatuses(id)).toEqual([0]);
  });

  it('403 for a user without permission on a workflow task; read-write (rw) lets them act', async () => {
    // Arrange: user 2 has rw on `task`, nothing on `other`.
    const mine = await workflowIn(0);
    const theirs = await workflowIn(0, other);
    // Act
    const denied = await operate('claim', { ids: [mine, theirs], created_by: 2 });
    const allowed = await operate('claim', { ids: [mine], created_by: 2, remark: 'mine' });
    // Assert
    expect(denied).toMatchObject({
      status: 403,
      code: 403,
      msg: `user [2] has no permission on task [${other.id}]`,
    });
    expect((await showWorkflow(theirs)).status).toBe(0);
    expect(allowed.data.workflows).toEqual([{ id: mine, status: 1 }]);
  });

  it('a role-9 user may act on any task, and a granted permission takes effect', async () => {
    const id = await workflowIn(0, other);
    const admin = await operate('claim', { ids: [id], created_by: 1 });
    expect(admin.data.workflows).toEqual([{ id, status: 1 }]);

    const id2 = await workflowIn(1, other);
    expect((await operate('close', { ids: [id2], remark: 'r', created_by: 5 })).status).toBe(403);
    const grant = (access: 'ro' | 'rw') =>
      db().send(
        new PutCommand({
          TableName: tableName(),
          Item: permissionItem({ task_id: other.id, uid: 5, access }),
        }),
      );
    // A read-only permission reads workflows but does not operate them.
    await grant('ro');
    expect(await operate('close', { ids: [id2], remark: 'r', created_by: 5 })).toMatchObject({
      status: 403,
      msg: `user [5] has read-only permission on task [${other.id}]`,
    });
    expect((await showWorkflow(id2)).status).toBe(1);
    await grant('rw');
    expect((await operate('close', { ids: [id2], remark: 'r', created_by: 5 })).data.workflows).toEqual([
      { id: id2, status: 9 },
    ]);
  });

  it('records the operator, or user 0 with a null creator when the application acts', async () => {
    const id = await workflowIn(0);
    await operate('assign', { ids: [id], remark: 'take it', created_by: 1, assignto: [4, 2] });
    await operate('claim', { ids: [id] });
    const wf = await showWorkflow(id);
    expect(wf.pipelines[1]).toMatchObject({
      status: 4,
      remark: 'take it',
      created_by: 1,
      creator: { uid: 1, username: 'Ann Lee', user: 'annlee', email: 'annlee@example.com' },
      props: {
        assignto: [
          {
            uid: 4,
            username: 'Bob Stone',
            user: 'bobstone',
            email: 'bob@example.com',
            department: 'Online School-Payments',
          },
          {
            uid: 2,
            username: '张三',
            user: 'zhangsan',
            email: 'zhangsan@example.com',
            department: '基础架构-日志中心',
          },
        ],
      },
    });
    expect(wf.pipelines[2]).toMatchObject({ status: 1, remark: '', created_by: 0, creator: null, props: {} });
  });
});

describe('concurrency', () => {
  it('exactly one of 5 parallel claims of one workflow wins; the others get 409', async () => {
    // Arrange
    const id = await workflowIn(0);
    // Act
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => operate('claim', { ids: [id], remark: `c${i}` })),
    );
    // Assert
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409))
      expect(r.msg).toMatch(new RegExp(`^workflow \\[${id}\\] `));
    expect(await pipelineStatuses(id)).toEqual([0, 1]);
  });

  it('overlapping batches: one wins, the loser changes nothing', async () => {
    const a = await workflowIn(0);
    const b = await workflowIn(0);
    const c = await workflowIn(0);
    // Two closes that share b: whichever commits first wins (a claim would not do: closing a claimed
    // workflow is allowed, so a claim that commits first lets the close succeed too).
    const [r1, r2] = await Promise.all([
      operate('close', { ids: [a, b], remark: 'first' }),
      operate('close', { ids: [b, c], remark: 'second' }),
    ]);
    expect([r1.status, r2.status].sort()).toEqual([200, 409]);
    const states = [
      (await showWorkflow(a)).status,
      (await showWorkflow(b)).status,
      (await showWorkflow(c)).status,
    ];
    expect(states).toEqual(r1.status === 200 ? [9, 9, 0] : [0, 9, 9]);
  });
});

describe('GET /workflow/show (API guide §10.4)', () => {
  it('returns every field with its type, pipelines in order, ctn as JSON text', async () => {
    // Arrange
    const { id, history } = await newWorkflow(task, {
      ctn: { hostname: 'db-2', nested: { a: [1, 2] } },
      level: 3,
    });
    await operate('claim', { ids: [id], created_by: 2, remark: 'on it' });
    // Act
    const wf = await showWorkflow(id);
    // Assert
    const now = await syncClock();
    expect(wf).toEqual({
      id,
      task_id: task.id,
      metric: history.metric,
      history_id: history.id,
      status: 1,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      pipelines: [
        { status: 0, remark: '', props: {}, created_by: 0, created_at: wf.created_at, creator: null },
        {
          status: 1,
          remark: 'on it',
          props: {},
          created_by: 2,
          created_at: wf.updated_at,
          creator: {
            uid: 2,
            username: '张三',
            user: 'zhangsan',
            email: 'zhangsan@example.com',
            department: '基础架构-日志中心',
          },
        },
      ],
      task: { id: task.id, name: task.name, department_id: 1, department: { id: 1, name: 'Infra' } },
      history: {
        id: history.id,
        uuid: history.uuid,
        batch: history.batch,
        metric: history.metric,
        notice_time: history.notice_time,
        level: 3,
        ctn: '{"hostname":"db-2","nested":{"a":[1,2]}}',
        created_at: history.created_at,
      },
    });
    expect(wf.created_at).toBeLessThanOrEqual(wf.updated_at);
    expect(wf.updated_at).toBeLessThanOrEqual(now);
    expect(JSON.parse(wf.history.ctn)).toEqual(history.ctn);
  });

  it('keeps showing a workflow after its task is deleted (snapshot of name and department)', async () => {
    const doomed = await createWorkflowTask([], { department_id: 3 });
    const { id } = await newWorkflow(doomed);
    const { taskAuth } = await import('../support/client.ts');
    const del = await api.delete('/alarmtask', { form: await taskAuth(doomed) });
    expect(del.code).toBe(0);
    const wf = await showWorkflow(id);
    expect(wf.task).toEqual({
      id: doomed.id,
      name: doomed.name,
      department_id: 3,
      department: { id: 3, name: 'Payments' },
    });
  });

  it('404 for an unknown id, 422 for a bad one, 401 without app auth', async () => {
    expect(await api.get('/workflow/show', { query: { id: 999_999_999 } })).toMatchObject({
      status: 404,
      msg: 'workflow [999999999] not found',
    });
    expect(await api.get('/workflow/show', { query: { id: 'x' } })).toMatchObject({ status: 422 });
    expect(await api.get('/workflow/show')).toMatchObject({ status: 422, msg: 'id is required' });
    expect(await api.get('/workflow/show', { query: { id: 1 }, app: null })).toMatchObject({ status: 401 });
  });
});

describe('createWorkflow and finishWorkflowsOfMetric (pipeline contract)', () => {
  it('is idempotent per alarm uuid', async () => {
    // Arrange
    const first = await newWorkflow(task);
    // Act: the same alarm again (a redelivery), and several at once.
    const again = await newWorkflow(task, first.history);
    const burst = await Promise.all(Array.from({ length: 4 }, () => newWorkflow(task, { ...first.history })));
    const fresh = await newWorkflow(task, { ...first.history, uuid: 'another-uuid-' + first.id });
    // Assert
    expect(first.created).toBe(true);
    expect(again).toMatchObject({ id: first.id, created: false });
    expect(burst.map((b) => b.id)).toEqual([first.id, first.id, first.id, first.id]);
    expect(fresh.created).toBe(true);
    expect(fresh.id).not.toBe(first.id);
    expect(await pipelineStatuses(first.id)).toEqual([0]);
  });

  it('finishes the open workflows of a metric only, with a recovered record by user 0', async () => {
    // Arrange
    const metric = 'f'.repeat(40);
    const pending = await newWorkflow(task, { metric });
    const processing = await newWorkflow(task, { metric });
    await operate('claim', { ids: [processing.id] });
    const closed = await newWorkflow(task, { metric });
    await operate('close', { ids: [closed.id], remark: 'x' });
    const otherMetric = await newWorkflow(task, { metric: 'e'.repeat(40) });
    const otherTask = await newWorkflow(other, { metric });
    // Act
    const finished = await finishWorkflowsOfMetric({ task: await loadTask(task.id), metric });
    const again = await finishWorkflowsOfMetric({ task: await loadTask(task.id), metric });
    // Assert
    expect(finished.sort()).toEqual([pending.id, processing.id].sort());
    expect(again).toEqual([]);
    for (const id of finished) {
      const wf = await showWorkflow(id);
      expect(wf.status).toBe(2);
      expect(wf.pipelines.at(-1)).toMatchObject({
        status: 2,
        remark: 'recovered',
        created_by: 0,
        creator: null,
      });
    }
    expect((await showWorkflow(closed.id)).status).toBe(9);
    expect((await showWorkflow(otherMetric.id)).status).toBe(0);
    expect((await showWorkflow(otherTask.id)).status).toBe(0);
  });

  it('a reactivated workflow is open again for its metric', async () => {
    const metric = 'd'.repeat(40);
    const wf = await newWorkflow(task, { metric });
    await operate('close', { ids: [wf.id], remark: 'x' });
    expect(await finishWorkflowsOfMetric({ task: await loadTask(task.id), metric })).toEqual([]);
    await operate('reactive', { ids: [wf.id], remark: 'back' });
    expect(await finishWorkflowsOfMetric({ task: await loadTask(task.id), metric })).toEqual([wf.id]);
  });
});
