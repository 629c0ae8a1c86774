import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTask, listTaskPermissions } from '../../shared/domain/tasks/repository.ts';
import { api, call, taskAuth } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask, taskBody, uniqueTaskName } from '../support/tasks.ts';

const show = async (t: CreatedTask) =>
  (await api.get('/alarmtask/show', { query: await taskAuth(t) })).data.task;
const update = async (t: CreatedTask, body: Record<string, unknown>) =>
  api.put('/alarmtask/update', { ...body, ...(await taskAuth(t)) });
const updateFields = async (t: CreatedTask, filter_fields: unknown, body: Record<string, unknown> = {}) =>
  api.put('/alarmtask/updatefields', { ...body, filter_fields, ...(await taskAuth(t)) });
const profile = async (uid: number) => (await api.get('/user/profile', { query: { uid } })).data.permission;

describe('PUT /alarmtask/update', () => {
  it('replaces the configuration and keeps status, credentials, creator and creation time', async () => {
    // Arrange
    const t = await createTask({
      created_by: 2,
      task_tags: [1],
      filter: {
        enable: true,
        mode: 1,
        conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '2' }], level: 9 }],
      },
    });
    await api.put('/alarmtask/stop', await taskAuth(t));
    const before = await getTask(t.id);
    const body = taskBody({
      created_by: 5,
      department_id: 3,
      flag_save_db: 0,
      receiver: { alarmgroup: [1] },
      template: { template_id: 1 },
    });
    // Act
    const res = await update(t, body);
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0 });
    expect(res.data.task).toMatchObject({
      id: t.id,
      name: body.name,
      token: t.token,
      secret: t.secret,
      department_id: 3,
      status: 0,
      created_by: 2,
      created_at: before?.created_at,
      department: { id: 3 },
      creator: { uid: 2 },
    });
    expect(res.data.nullPhoneUsers).toEqual([]);
    const after = await getTask(t.id);
    expect(after).toMatchObject({
      name: body.name,
      department_id: 3,
      flag_save_db: 0,
      status: 0,
      token: t.token,
      secret: t.secret,
      created_by: 2,
      created_at: before?.created_at,
      task_tags: [],
      permission: { rw: [2], ro: [] },
      receiver: { alarmgroup: [1], mode: 1 },
      filter: { enable: false },
      template: { template_id: 1 },
      version: (before?.version ?? 0) + 1,
    });
    expect(after?.updated_at).toBeGreaterThanOrEqual(before?.updated_at ?? 0);
  });

  it('frees the old name on rename and refuses a rename onto an existing name', async () => {
    const [a, b] = await Promise.all([createTask(), createTask()]);
    const newName = uniqueTaskName('renamed');
    const renamed = await update(a, taskBody({ name: newName }));
    expect(renamed.data.task.name).toBe(newName);
    // The old name is free again.
    const reuse = await api.post('/alarmtask/store', taskBody({ name: a.name }));
    expect(reuse.code).toBe(0);
    // b cannot take a's new name.
    const clash = await update(b, taskBody({ name: newName }));
    expect(clash).toMatchObject({ status: 409, code: 409, msg: `task [${newName}] already exists` });
    expect((await getTask(b.id))?.name).toBe(b.name);
    // Keeping one's own name is fine.
    const same = await update(b, taskBody({ name: b.name, flag_save_db: 0 }));
    expect(same.code).toBe(0);
  });

  it('validates like create and changes nothing on failure', async () => {
    const t = await createTask();
    const before = await getTask(t.id);
    const bad = await update(t, taskBody({ name: t.name, receiver: {} }));
    const missing = await update(t, { flag_save_db: 1 });
    const unknownGroup = await update(t, taskBody({ receiver: { alarmgroup: [999] } }));
    expect(bad).toMatchObject({ status: 422, msg: 'receiver must have alarmgroup or channels' });
    expect(missing).toMatchObject({ status: 422, msg: 'name is required' });
    expect(missing.data.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      'department_id',
      'name',
      'receiver',
    ]);
    expect(unknownGroup).toMatchObject({ status: 404, msg: 'alarm group [999] not found' });
    expect(await getTask(t.id)).toEqual(before);
  });

  it('keeps permission items in step: /user/profile lists read and write tasks', async () => {
    // Arrange: user 3 writes a, reads b; user 4 reads a.
    const a = await createTask({ permission: { rw: [3], ro: [4] } });
    const b = await createTask({ permission: { ro: [3, 3] } });
    const p3 = await profile(3);
    const p4 = await profile(4);
    expect(p3.write).toContain(a.id);
    expect(p3.read).toContain(b.id);
    expect(p3.read).not.toContain(a.id);
    expect(p4.read).toContain(a.id);
    // Act: swap: 3 becomes a reader of a, 4 loses access, 5 becomes a writer.
    const res = await update(a, taskBody({ name: a.name, permission: { rw: [5], ro: [3] } }));
    expect(res.code).toBe(0);
    // Assert
    const [q3, q4, q5] = await Promise.all([profile(3), profile(4), profile(5)]);
    expect(q3.write).not.toContain(a.id);
    expect(q3.read).toContain(a.id);
    expect(q4.read).not.toContain(a.id);
    expect(q4.write).not.toContain(a.id);
    expect(q5.write).toContain(a.id);
    const items = await listTaskPermissions(a.id);
    expect(items.map((i) => [i.uid, i.access]).sort()).toEqual([
      [1, 'rw'],
      [3, 'ro'],
      [5, 'rw'],
    ]);
    const view = await show(a);
    expect(view.permission.rw.map((p: { uid: number }) => p.uid)).toEqual([1, 5]);
    expect(view.permission.ro.map((p: { uid: number }) => p.uid)).toEqual([3]);
  });
  it('fits 90 permission users in one transaction and refuses a change too large for one', async () => {
    const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
    const t = await createTask({ permission: { ro: range(1000, 89) } });
    expect((await listTaskPermissions(t.id)).length).toBe(90);
    const swapAll = await update(t, taskBody({ name: t.name, permission: { ro: range(2000, 89) } }));
    expect(swapAll).toMatchObject({
      status: 422,
      code: 422,
      msg: 'permission may change at most 97 users at once',
    });
    const swapSome = await update(
      t,
      taskBody({ name: t.name, permission: { ro: [...range(1000, 49), ...range(2000, 40)] } }),
    );
    expect(swapSome.code).toBe(0);
    const items = await listTaskPermissions(t.id);
    expect(items.length).toBe(90);
    expect(items.filter((i) => i.uid >= 2000).length).toBe(40);
  });
});

describe('PUT /alarmtask/updatefields', () => {
  it('copies only the listed nested paths and leaves everything else untouched', async () => {
    // Arrange
    const t = await createTask({
      task_tags: [2],
      receiver: { channels: { email: [1], dingworker: [2, 3] }, alarmgroup: [1] },
      template: {
        template_id: 1,
        udf: {
          compressed: { email: { format: 1, template: 'old' } },
          recovery: { sms: { template: 'keep me' } },
        },
      },
    });
    const before = await getTask(t.id);
    // Act
    const res = await updateFields(t, ['template.udf.compressed', 'receiver.channels.dingworker'], {
      name: 'ignored because not listed',
      task_tags: [],
      template: { udf: { compressed: { dinggroup: { format: 2, template: 'new' } } } },
      receiver: { channels: { dingworker: [4] } },
    });
    // Assert
    expect(res).toMatchObject({ code: 0, data: { task: { id: t.id, name: t.name } } });
    const after = await getTask(t.id);
    expect(after?.template).toEqual({
      template_id: 1,
      udf: {
        compressed: { dinggroup: { format: 2, template: 'new' } },
        recovery: { sms: { template: 'keep me' } },
      },
    });
    expect(after?.receiver).toEqual({ channels: { email: [1], dingworker: [4] }, alarmgroup: [1], mode: 1 });
    expect(after?.name).toBe(t.name);
    expect(after?.task_tags).toEqual([2]);
    expect(after?.version).toBe((before?.version ?? 0) + 1);
  });

  it('clears a listed path that is absent from the request', async () => {
    const t = await createTask({ task_tags: [1, 2], receiver: { channels: { email: [1], phone: [2] } } });
    const res = await updateFields(t, ['task_tags', 'receiver.channels.phone']);
    expect(res.code).toBe(0);
    const view = await show(t);
    expect(view.task_tags).toEqual([]);
    expect(view.receiver.channels.phone).toEqual([]);
    expect(view.receiver.channels.email.map((p: { uid: number }) => p.uid)).toEqual([1]);
  });

  it('renames through the name path and reports phone-less users like store', async () => {
    const t = await createTask();
    const name = uniqueTaskName('fields');
    const res = await updateFields(t, ['name', 'receiver.channels.sms'], {
      name,
      receiver: { channels: { sms: [6] } },
    });
    expect(res.data.task.name).toBe(name);
    expect(res.data.nullPhoneUsers.map((u: { uid: number }) => u.uid)).toEqual([6]);
    expect((await api.post('/alarmtask/store', taskBody({ name: t.name }))).code).toBe(0);
  });

  it.each([
    ['a path outside the updatable fields', ['name', 'status'], {}, 'status is not an updatable field'],
    ['a token path', ['token'], {}, 'token is not an updatable field'],
    ['no filter_fields', undefined, {}, 'filter_fields is required'],
    ['empty filter_fields', [], {}, 'filter_fields must not be empty'],
    [
      'a result that fails validation',
      ['receiver'],
      { receiver: { channels: {} } },
      'receiver must have alarmgroup or channels',
    ],
    ['clearing a required field', ['name'], {}, 'name is required'],
    [
      'compress method 2',
      ['compress'],
      { compress: { enable: true, method: 2, strategy: 1, strategy_cycle: 1 } },
      'compress method 2 is not supported',
    ],
    [
      'a disabled module DynamoDB cannot store',
      ['workflow.reminds'],
      { workflow: { reminds: [{ '': 1 }] } },
      'workflow.reminds.0 must not have an empty key',
    ],
  ])('refuses %s with 422 and changes nothing', async (_label, paths, body, msg) => {
    const t = await createTask();
    const before = await getTask(t.id);
    const res = await updateFields(t, paths, body);
    expect(res).toMatchObject({ status: 422, code: 422, msg });
    expect(await getTask(t.id)).toEqual(before);
  });

  it('keeps both of two concurrent partial updates of different fields', async () => {
    const t = await createTask({ task_tags: [1] });
    const name = uniqueTaskName('concurrent');
    const results = await Promise.all([
      updateFields(t, ['name'], { name }),
      updateFields(t, ['task_tags'], { task_tags: [2] }),
      updateFields(t, ['flag_save_db'], { flag_save_db: 0 }),
      updateFields(t, ['receiver.channels.sms'], { receiver: { channels: { sms: [2] } } }),
    ]);
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);
    const after = await getTask(t.id);
    expect(after).toMatchObject({
      name,
      task_tags: [2],
      flag_save_db: 0,
      receiver: { channels: { email: [1], sms: [2] } },
      version: 5,
    });
  });

  it('lets updatefields and stop run at once without losing either', async () => {
    const t = await createTask();
    const [fields, stop] = await Promise.all([
      updateFields(t, ['flag_save_db'], { flag_save_db: 0 }),
      api.put('/alarmtask/stop', await taskAuth(t)),
    ]);
    expect([fields.code, stop.code]).toEqual([0, 0]);
    expect(await getTask(t.id)).toMatchObject({ status: 0, flag_save_db: 0 });
  });
});

describe('PING on webhook changes', () => {
  const first = new TestReceiver();
  const second = new TestReceiver();
  beforeAll(async () => {
    await first.start();
    await second.start();
  });
  afterAll(async () => {
    await first.stop();
    await second.stop();
  });

  it('pings when update adds a webhook and when updatefields changes it', async () => {
    const t = await createTask();
    const added = await update(
      t,
      taskBody({ name: t.name, receiver: { channels: { webhook: `${first.url}/a` } } }),
    );
    expect(added.code).toBe(0);
    await first.waitFor(() => first.events('PING').length >= 1);
    const changed = await updateFields(t, ['receiver.channels.webhook'], {
      receiver: { channels: { webhook: { url: `${second.url}/b` } } },
    });
    expect(changed.code).toBe(0);
    await second.waitFor(() => second.events('PING').length >= 1);
    expect(second.events('PING')[0].path).toBe('/b');
    // One PING each (a queue's second delivery of one carries the same webhook-id)
    for (const r of [first, second])
      expect(new Set(r.events('PING').map((p) => p.headers['webhook-id'])).size).toBe(1);
    expect((await getTask(t.id))?.receiver.channels?.webhook).toBe(`${second.url}/b`);
  });
});

describe('DELETE /alarmtask', () => {
  it('deletes with the parameters in a form body: task, name and permissions are gone', async () => {
    // Arrange
    const t = await createTask({ permission: { rw: [2], ro: [4] } });
    expect((await listTaskPermissions(t.id)).length).toBe(3);
    // Act
    const res = await call('DELETE', '/alarmtask', { form: await taskAuth(t) });
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0, data: { id: t.id } });
    expect(await getTask(t.id, true)).toBeUndefined();
    expect(await listTaskPermissions(t.id)).toEqual([]);
    expect((await profile(2)).write).not.toContain(t.id);
    expect((await profile(4)).read).not.toContain(t.id);
    const shown = await api.get('/alarmtask/show', { query: await taskAuth(t) });
    expect(shown).toMatchObject({ status: 404, code: 404, msg: `task [${t.id}] not found` });
    expect((await api.post('/alarmtask/store', taskBody({ name: t.name }))).code).toBe(0);
  });

  it('deletes with the parameters in the query string (MD5 signature)', async () => {
    const t = await createTask();
    const res = await call('DELETE', '/alarmtask', { query: await taskAuth(t, { scheme: 'md5' }) });
    expect(res).toMatchObject({ code: 0, data: { id: t.id } });
    const again = await call('DELETE', '/alarmtask', { query: await taskAuth(t) });
    expect(again).toMatchObject({ status: 404, code: 404 });
  });

  it('refuses alarms to a deleted task', async () => {
    const t = await createTask();
    await call('DELETE', '/alarmtask', { form: await taskAuth(t) });
    const auth = await taskAuth({ id: t.id, secret: t.token }, { scheme: 'md5' });
    const res = await call('POST', '/alarm/report', {
      json: { taskid: t.id, timestamp: auth.timestamp, sign: auth.sign, ctn: { a: 1 } },
      app: null,
    });
    // HTTP 200: /alarm/* refusals travel in the envelope only (API guide §2.2).
    expect(res).toMatchObject({ status: 200, code: 401, msg: 'signature invalid' });
  });

  it('refuses a wrong signature and keeps the task', async () => {
    const [t, other] = await Promise.all([createTask(), createTask()]);
    const res = await call('DELETE', '/alarmtask', {
      form: await taskAuth({ id: t.id, secret: other.secret }),
    });
    expect(res).toMatchObject({ status: 401, msg: 'signature invalid' });
    expect(await getTask(t.id)).toBeDefined();
  });
});
