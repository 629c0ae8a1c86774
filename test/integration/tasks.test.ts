import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { md5Sign } from '../../shared/domain/auth/signature.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import { api, call, serviceNow, taskAuth } from '../support/client.ts';
import { createTask, taskBody, uniqueTaskName } from '../support/tasks.ts';
import { dept, summary, user } from '../support/fixture.ts';

const HEX40 = /^[0-9a-f]{40}$/;

const store = (body: Record<string, unknown>) => api.post('/alarmtask/store', body);
const cond = (operator: string, threshold?: string) => ({
  rule: [{ field: 'ctn.host', operator, ...(threshold !== undefined ? { threshold } : {}) }],
});

describe('POST /alarmtask/store', () => {
  it('creates a task and answers with API guide §5.8', async () => {
    // Arrange
    const body = taskBody({ department_id: 2, created_by: 2 });
    const before = await serviceNow();
    // Act
    const res = await store(body);
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0, msg: 'success' });
    const t = res.data.task;
    expect(Object.keys(t).sort()).toEqual(
      [
        'id',
        'name',
        'token',
        'secret',
        'department_id',
        'status',
        'created_by',
        'created_at',
        'department',
        'creator',
      ].sort(),
    );
    expect(Number.isSafeInteger(t.id) && t.id > 0).toBe(true);
    expect(t.name).toBe(body.name);
    expect(t.token).toMatch(HEX40);
    expect(t.secret).toMatch(HEX40);
    expect(t.token).not.toBe(t.secret);
    expect(t.department_id).toBe(2);
    expect(t.status).toBe(1);
    expect(t.created_by).toBe(2);
    expect(t.created_at).toBeGreaterThanOrEqual(before);
    expect(t.department).toEqual({ id: 2, name: dept(2).name });
    expect(t.creator).toEqual(summary(2));
    expect(res.data.nullPhoneUsers).toEqual([]);
  });

  it('allocates distinct ids and independent credentials', async () => {
    const [a, b] = await Promise.all([createTask(), createTask()]);
    expect(a.id).not.toBe(b.id);
    expect(new Set([a.token, a.secret, b.token, b.secret]).size).toBe(4);
  });

  it('stores the token and secret sealed, never in plain text', async () => {
    const t = await createTask();
    const raw = await db().send(new GetCommand({ TableName: tableName(), Key: keys.task(t.id) }));
    const text = JSON.stringify(raw.Item);
    expect(text).not.toContain(t.token);
    expect(text).not.toContain(t.secret);
    const stored = await getTask(t.id);
    expect(stored?.token).toBe(t.token);
    expect(stored?.secret).toBe(t.secret);
  });

  it('stores the normalized request form', async () => {
    const t = await createTask({
      permission: { rw: [2], ro: [2, 3] },
      receiver: { channels: { email: [1, 1], webhook: { url: 'https://hooks.example.com/a' } }, junk: true },
      compress: { enable: true, method: 4, strategy: 3, strategy_cycle: 10, strategy_count: 5 },
      recovery: { enable: true, mode: 2, delay_interval: 15, conditions: [cond('eq', 'x')] },
      filter: { mode: 9 },
      unknown_field: 1,
    });
    const stored = await getTask(t.id);
    expect(stored).toMatchObject({
      permission: { rw: [1, 2], ro: [3] },
      receiver: { channels: { email: [1], webhook: 'https://hooks.example.com/a' }, mode: 1 },
      compress: { enable: true, method: 4, strategy: 3, strategy_cycle: 10, strategy_count: 5, not_match: 1 },
      recovery: { enable: true, mode: 2, delay_interval: 15 },
      filter: { enable: false, mode: 9 },
      template: { template_id: 0 },
      task_tags: [],
      status: 1,
      version: 1,
    });
    expect(stored?.recovery).not.toHaveProperty('conditions');
    expect(stored).not.toHaveProperty('unknown_field');
    expect(stored?.receiver).not.toHaveProperty('junk');
  });

  it('lists users of phone and sms channels without a phone (alarm-group members included)', async () => {
    const res = await store(
      taskBody({
        receiver: {
          alarmgroup: [2], // sms [4, 6]; 6 has no phone
          channels: { sms: [3, 1], phone: [3] },
          dispatch: [{ conditions: [cond('eq', 'a')], receiver: { channels: { phone: [2] } } }],
        },
        workflow: {
          enable: true,
          reminds: [
            { mode: 'once', status: 0, interval: 5, reuse_receiver: 0, receiver: { channels: { sms: [6] } } },
          ],
        },
        upgrade: {
          enable: true,
          strategies: [
            { interval: 5, count: 2, level: 3, reuse_receiver: 0, receiver: { channels: { phone: [3, 4] } } },
          ],
        },
      }),
    );
    expect(res.code).toBe(0);
    const listed = [...res.data.nullPhoneUsers].sort((a, b) => a.uid - b.uid);
    expect(listed).toEqual(
      [3, 6].map((uid) => ({
        uid,
        user: user(uid).user,
        username: user(uid).username,
        email: user(uid).email,
        department: user(uid).department,
      })),
    );
  });

  it('refuses a duplicate name with 409 and keeps the first task', async () => {
    const first = await createTask();
    const res = await store(taskBody({ name: first.name }));
    expect(res).toMatchObject({ status: 409, code: 409, msg: `task [${first.name}] already exists` });
    expect((await getTask(first.id))?.name).toBe(first.name);
  });

  it('lets one of two concurrent creates with the same name win', async () => {
    const name = uniqueTaskName('race');
    const results = await Promise.all([store(taskBody({ name })), store(taskBody({ name }))]);
    expect(results.map((r) => r.code).sort()).toEqual([0, 409]);
  });

  it.each([
    ['unknown creator', { created_by: 999 }, 'user [999] not found'],
    ['unknown department', { department_id: 999 }, 'department [999] not found'],
    ['unknown alarm group', { receiver: { alarmgroup: [1, 998, 999] } }, 'alarm group [998, 999] not found'],
    [
      'unknown dispatch alarm group',
      {
        receiver: {
          channels: { email: [1] },
          dispatch: [{ conditions: [cond('isset')], receiver: { alarmgroup: [997] } }],
        },
      },
      'alarm group [997] not found',
    ],
    [
      'unknown upgrade alarm group',
      {
        upgrade: {
          enable: true,
          strategies: [
            { interval: 1, count: 1, level: 1, reuse_receiver: 0, receiver: { alarmgroup: [996] } },
          ],
        },
      },
      'alarm group [996] not found',
    ],
    [
      'unknown reminder alarm group',
      {
        workflow: {
          enable: true,
          reminds: [
            { mode: 'cycle', status: 1, interval: 1, reuse_receiver: 0, receiver: { alarmgroup: [995] } },
          ],
        },
      },
      'alarm group [995] not found',
    ],
    ['unknown template', { template: { template_id: 994 } }, 'template [994] not found'],
  ])('answers 404 for an %s and writes nothing', async (_label, overrides, msg) => {
    const body = taskBody(overrides);
    const res = await store(body);
    expect(res).toMatchObject({ status: 404, code: 404, msg, data: {} });
    // The name was not taken: nothing was written.
    const again = await store(taskBody({ name: body.name }));
    expect(again.code).toBe(0);
  });

  it.each([
    ['a name over 100 characters', { name: 'n'.repeat(101) }, 'name must be at most 100 characters'],
    ['no receiver', { receiver: undefined }, 'receiver is required'],
    [
      'a receiver without alarmgroup or channels',
      { receiver: { channels: {} } },
      'receiver must have alarmgroup or channels',
    ],
    ['a missing flag_save_db', { flag_save_db: undefined }, 'flag_save_db is required'],
    [
      'an enabled filter without mode',
      { filter: { enable: true, conditions: [{ ...cond('eq', '1'), level: 1 }] } },
      'filter.mode is required',
    ],
    [
      'a reminder without its fields',
      { workflow: { enable: true, reminds: [{ mode: 'once', interval: 5, reuse_receiver: 1 }] } },
      'workflow.reminds.0.status is required',
    ],
    [
      'seven robots in a group',
      {
        receiver: {
          channels: { dinggroup: Array.from({ length: 7 }, (_, i) => ({ webhook: `tok${i}`, secret: 's' })) },
        },
      },
      'receiver.channels.dinggroup must have at most 6 items',
    ],
    [
      'compress method 2',
      { compress: { enable: true, method: 2, strategy: 1, strategy_cycle: 5 } },
      'compress method 2 is not supported',
    ],
    [
      'an unknown operator',
      { recovery: { enable: true, mode: 1, conditions: [cond('like', 'x')] } },
      'recovery.conditions.0.rule.0.operator must be one of eq-self, eq, neq, gt, gte, lt, lte, in, not-in, contain, not-contain, isset, not-isset',
    ],
    [
      'a missing threshold',
      { compress: { enable: true, method: 1, conditions: [cond('gte')], strategy: 1, strategy_cycle: 5 } },
      'compress.conditions.0.rule.0.threshold is required',
    ],
    ['duplicate tags', { task_tags: [1, 2, 1] }, 'task_tags must not contain duplicates'],
    [
      'a webhook that is not a URL',
      { receiver: { channels: { webhook: 'not a url' } } },
      'receiver.channels.webhook must be an http(s) URL',
    ],
    [
      'more than 90 permission users',
      { permission: { ro: Array.from({ length: 90 }, (_, i) => i + 10) } },
      'permission must name at most 90 distinct users',
    ],
  ])('answers 422 for %s', async (_label, overrides, msg) => {
    const body = taskBody(overrides as Record<string, unknown>);
    const res = await store(body);
    expect(res).toMatchObject({ status: 422, code: 422, msg });
    expect(res.data.errors[0]).toEqual({ field: expect.any(String), message: expect.any(String) });
    expect(`${res.data.errors[0].field} ${res.data.errors[0].message}`).toBe(msg);
  });

  it('lists every validation problem in data.errors', async () => {
    const res = await store({ department_id: 'x', flag_save_db: 1, receiver: {}, name: '' });
    expect(res.status).toBe(422);
    expect(res.data.errors).toEqual(
      expect.arrayContaining([
        { field: 'created_by', message: 'is required' },
        { field: 'department_id', message: 'must be an integer' },
        { field: 'name', message: 'must not be empty' },
        { field: 'receiver', message: 'must have alarmgroup or channels' },
      ]),
    );
  });

  it('needs application authentication', async () => {
    const res = await call('POST', '/alarmtask/store', { json: taskBody(), app: null });
    expect(res).toMatchObject({ status: 401, code: 401 });
  });

  it('refuses a body that is not JSON', async () => {
    const res = await call('POST', '/alarmtask/store', {
      body: 'name=x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res).toMatchObject({ status: 400, code: 400 });
  });

  it('answers 422, not 500, for a disabled module that would not read back as sent, and writes nothing', async () => {
    // Arrange: an empty key, and a number JSON.parse turns into Infinity
    const body = taskBody({ filter: { enable: false, x: { '': 1 } } });
    const raw = JSON.stringify(taskBody({ name: body.name })).replace(
      /}$/,
      ',"upgrade":{"enable":false,"n":1e400}}',
    );
    // Act
    const emptyKey = await store(body);
    const infinite = await call('POST', '/alarmtask/store', {
      body: raw,
      headers: { 'content-type': 'application/json' },
    });
    // Assert
    expect(emptyKey).toMatchObject({ status: 422, code: 422, msg: 'filter.x must not have an empty key' });
    expect(infinite).toMatchObject({
      status: 422,
      code: 422,
      msg: `upgrade.n must be a number between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`,
    });
    expect((await store(taskBody({ name: body.name }))).code).toBe(0);
  });
});

describe('task authentication (API guide §3.2)', () => {
  it('accepts the legacy MD5 signature', async () => {
    const t = await createTask();
    const res = await api.get('/alarmtask/show', { query: await taskAuth(t, { scheme: 'md5' }) });
    expect(res).toMatchObject({ code: 0, data: { task: { id: t.id } } });
  });

  it('refuses another task’s secret, a stale timestamp, an unknown task and missing parameters', async () => {
    const [t, other] = await Promise.all([createTask(), createTask()]);
    const now = await serviceNow();
    const wrongSecret = await api.get('/alarmtask/show', {
      query: await taskAuth({ id: t.id, secret: other.secret }),
    });
    const stale = await api.get('/alarmtask/show', { query: await taskAuth(t, { timestamp: now - 301 }) });
    const unknown = await api.get('/alarmtask/show', {
      query: await taskAuth({ id: 987654321, secret: t.secret }),
    });
    const missing = await api.get('/alarmtask/show', { query: { id: t.id, timestamp: now } });
    const badMd5 = await api.get('/alarmtask/show', {
      query: { id: t.id, timestamp: now, sign: md5Sign(other.secret, t.id, now) },
    });
    expect(wrongSecret).toMatchObject({ status: 401, code: 401, msg: 'signature invalid' });
    expect(stale).toMatchObject({ status: 401, code: 401, msg: 'signature was expired' });
    expect(unknown).toMatchObject({ status: 404, code: 404, msg: 'task [987654321] not found' });
    expect(missing).toMatchObject({ status: 422, code: 422, msg: 'sign is required' });
    expect(badMd5).toMatchObject({ status: 401, code: 401, msg: 'signature invalid' });
  });

  it('422s a task id beyond a safe integer instead of looking it up', async () => {
    const res = await api.get('/alarmtask/show', {
      query: { id: '1' + '0'.repeat(23), timestamp: 1, sign: 'x' },
    });
    expect(res).toMatchObject({
      status: 422,
      code: 422,
      msg: `id must be at most ${Number.MAX_SAFE_INTEGER}`,
    });
  });

  it('takes the parameters from the JSON body of a PUT (timestamp as string or number)', async () => {
    const t = await createTask();
    const auth = await taskAuth(t);
    const asString = await api.put('/alarmtask/stop', auth);
    const asNumber = await api.put('/alarmtask/start', { ...auth, timestamp: Number(auth.timestamp) });
    const inQueryOnly = await api.put('/alarmtask/stop', {}, { query: await taskAuth(t) });
    expect(asString).toMatchObject({ code: 0, data: { id: t.id } });
    expect(asNumber).toMatchObject({ code: 0, data: { id: t.id } });
    expect(inQueryOnly).toMatchObject({ status: 422, code: 422 });
  });
});
