import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { backfillTaskIndex } from '../../shared/domain/tasks/list.ts';
import { api, serviceNow, taskAuth } from '../support/client.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { allPages, type Any } from '../support/pages.ts';

/** Lower-case ASCII, unique to this run: every listing below is narrowed to this file's tasks by it. */
const P = `rtw${randomBytes(4).toString('hex')}`;

const listTasks = (query: Record<string, string | number>) => api.get<Any>('/alarmtask/list', { query });
const ids = (res: { data: { tasks: { id: number }[] } }) => res.data.tasks.map((t) => t.id);

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
