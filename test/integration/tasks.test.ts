import { readFileSync } from 'node:fs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { md5Sign } from '../../shared/domain/auth/signature.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import { api, call, serviceNow, taskAuth } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { fixturePath } from '../support/seed.ts';
import { createTask, taskBody, uniqueTaskName } from '../support/tasks.ts';

// biome-ignore lint/suspicious/noExplicitAny: fixture records
const fixture = JSON.parse(readFileSync(fixturePath, 'utf8')) as Record<string, any[]>;
const user = (uid: number) => fixture.users.find((u) => u.uid === uid);
const summary = (uid: number) => {
  const u = user(uid);
  return { uid, username: u.username, email: u.email, department: u.department };
};
const person = (uid: number) => ({ ...summary(uid), user: user(uid).user });
const dept = (id: number) => fixture.departments.find((d) => d.id === id);
const group = (id: number) => fixture.alarm_groups.find((g) => g.id === id);
const tag = (id: number) => fixture.tags.find((t) => t.id === id);
const template = (id: number) => fixture.templates.find((t) => t.id === id);
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

describe('GET /alarmtask/show', () => {
  const webhookReceiver = new TestReceiver();
  beforeAll(() => webhookReceiver.start());
  afterAll(() => webhookReceiver.stop());

  it('returns every field of API guide §5.8 with persons, groups, tags and template expanded', async () => {
    // Arrange
    const webhook = `${webhookReceiver.url}/hook`;
    const remindHook = `${webhookReceiver.url}/remind`;
    const upgradeHook = `${webhookReceiver.url}/upgrade`;
    const body = taskBody({
      created_by: 2,
      department_id: 3,
      flag_save_db: 0,
      task_tags: [2, 1, 999],
      permission: { rw: [4], ro: [3, 404] },
      receiver: {
        alarmgroup: [1],
        channels: {
          sms: [2, 404],
          email: [1],
          phone: [4],
          dingworker: [3],
          yachworker: [5],
          wechat: [6],
          dinggroup: [{ webhook: 'ding-token', secret: 'ding-secret' }],
          yachgroup: [{ webhook: 'yach-token', secret: 'yach-secret' }],
          webhook,
        },
        dispatch: [
          {
            conditions: [cond('eq', 'db1')],
            receiver: { alarmgroup: [2], channels: { phone: [4], dinggroup: [{ webhook: 'd2' }] } },
          },
        ],
        mode: 2,
      },
      workflow: {
        enable: true,
        reminds: [
          {
            mode: 'cycle',
            status: 0,
            interval: 30,
            reuse_receiver: 0,
            receiver: {
              alarmgroup: [1],
              channels: {
                email: [2],
                phone: [5],
                dinggroup: [{ webhook: 'remind-ding', secret: 'remind-secret' }],
                webhook: remindHook,
              },
            },
          },
          { mode: 'once', status: 1, interval: 5, reuse_receiver: 1 },
        ],
      },
      filter: { enable: true, mode: 2, conditions: [{ ...cond('contain', 'test'), level: 9 }], not_match: 1 },
      upgrade: {
        enable: true,
        strategies: [
          { interval: 10, count: 3, level: 3, reuse_receiver: 1 },
          {
            interval: 20,
            count: 5,
            level: 2,
            reuse_receiver: 0,
            receiver: {
              alarmgroup: [2],
              channels: { sms: [4], dinggroup: [{ webhook: 'upgrade-ding' }], webhook: { url: upgradeHook } },
            },
          },
        ],
      },
      compress: {
        enable: true,
        method: 1,
        conditions: [cond('eq-self')],
        strategy: 5,
        strategy_cycle: 5,
        strategy_count: 4,
        not_match: 0,
      },
      recovery: { enable: true, mode: 1, conditions: [cond('eq', 'ok')] },
      template: {
        template_id: 1,
        udf: { compressed: { email: { format: 3, template: '<b>{task.name}</b>' } } },
      },
    });
    const created = await store(body);
    expect(created.code).toBe(0);
    const t = created.data.task;
    // Act
    const res = await api.get('/alarmtask/show', { query: await taskAuth(t) });
    // Assert
    expect(res).toMatchObject({ status: 200, code: 0, msg: 'success' });
    const tpl = template(1);
    expect(res.data.task).toEqual({
      id: t.id,
      name: body.name,
      pinyin: body.name,
      token: t.token,
      secret: t.secret,
      department_id: 3,
      flag_save_db: 0,
      status: 1,
      created_by: 2,
      created_at: t.created_at,
      updated_at: t.created_at,
      department: { id: 3, name: dept(3).name },
      creator: summary(2),
      permission: { rw: [summary(2), summary(4)], ro: [summary(3)] },
      receiver: {
        alarmgroup: [{ id: 1, name: group(1).name, remark: group(1).remark, receiver: group(1).receiver }],
        channels: {
          sms: [summary(2)],
          email: [summary(1)],
          phone: [summary(4)],
          dingworker: [summary(3)],
          yachworker: [summary(5)],
          wechat: [summary(6)],
          dinggroup: [{ webhook: 'ding-token', secret: 'ding-secret' }],
          yachgroup: [{ webhook: 'yach-token', secret: 'yach-secret' }],
          webhook: { url: webhook },
        },
        dispatch: [
          {
            conditions: [cond('eq', 'db1')],
            receiver: {
              alarmgroup: [
                { id: 2, name: group(2).name, remark: group(2).remark, receiver: group(2).receiver },
              ],
              channels: {
                sms: [],
                email: [],
                phone: [summary(4)],
                dingworker: [],
                yachworker: [],
                dinggroup: [{ webhook: 'd2', secret: '' }],
                yachgroup: [],
                webhook: { url: '' },
              },
            },
          },
        ],
        mode: 2,
      },
      workflow: {
        enable: true,
        reminds: [
          {
            mode: 'cycle',
            status: 0,
            interval: 30,
            reuse_receiver: 0,
            receiver: {
              alarmgroup: [
                { id: 1, name: group(1).name, remark: group(1).remark, receiver: group(1).receiver },
              ],
              channels: {
                sms: [],
                email: [summary(2)],
                phone: [summary(5)],
                dingworker: [],
                yachworker: [],
                dinggroup: [{ webhook: 'remind-ding', secret: 'remind-secret' }],
                yachgroup: [],
                webhook: { url: remindHook },
              },
              dispatch: [],
              mode: 1,
            },
          },
          { mode: 'once', status: 1, interval: 5, reuse_receiver: 1 },
        ],
      },
      filter: { enable: true, mode: 2, conditions: [{ ...cond('contain', 'test'), level: 9 }], not_match: 1 },
      upgrade: {
        enable: true,
        strategies: [
          { interval: 10, count: 3, level: 3, reuse_receiver: 1 },
          {
            interval: 20,
            count: 5,
            level: 2,
            reuse_receiver: 0,
            receiver: {
              alarmgroup: [
                { id: 2, name: group(2).name, remark: group(2).remark, receiver: group(2).receiver },
              ],
              channels: {
                sms: [summary(4)],
                email: [],
                phone: [],
                dingworker: [],
                yachworker: [],
                dinggroup: [{ webhook: 'upgrade-ding', secret: '' }],
                yachgroup: [],
                webhook: { url: upgradeHook },
              },
              dispatch: [],
              mode: 1,
            },
          },
        ],
      },
      compress: {
        enable: true,
        method: 1,
        conditions: [cond('eq-self')],
        strategy: 5,
        strategy_cycle: 5,
        strategy_count: 4,
        not_match: 0,
      },
      recovery: { enable: true, mode: 1, conditions: [cond('eq', 'ok')] },
      template: {
        template_id: 1,
        type: 2,
        template: {
          id: 1,
          name: tpl.name,
          pinyin: tpl.name,
          remark: tpl.remark,
          // The effective template (API guide §5.8): every scene and channel, each with its source.
          template: expect.objectContaining({
            compressed: expect.objectContaining({
              email: { type: 2, format: 3, template: '<b>{task.name}</b>' },
            }),
          }),
          created_by: tpl.created_by,
          created_at: expect.any(Number),
          updated_at: expect.any(Number),
          permission: tpl.permission.map(person),
          creator: person(tpl.created_by),
        },
        udf: { compressed: { email: { format: 3, template: '<b>{task.name}</b>' } } },
      },
      task_tags: [2, 1].map((id) => ({
        id,
        name: tag(id).name,
        remark: tag(id).remark,
        created_by: tag(id).created_by,
        creator: person(tag(id).created_by),
      })),
    });
  });

  it('expands users and groups that only reminder and upgrade receivers name; a disabled module stays as sent', async () => {
    // Arrange: the task receiver names neither group nor users 4 and 5
    const hook = `${webhookReceiver.url}/own`;
    const enabled = await createTask({
      workflow: {
        enable: true,
        reminds: [{ mode: 'once', status: 0, interval: 5, reuse_receiver: 0, receiver: { alarmgroup: [2] } }],
      },
      upgrade: {
        enable: true,
        strategies: [
          {
            interval: 10,
            count: 2,
            level: 1,
            reuse_receiver: 0,
            receiver: { channels: { phone: [4], yachgroup: [{ webhook: 'y', secret: 's' }], webhook: hook } },
          },
        ],
      },
    });
    const disabledUpgrade = {
      interval: 10,
      count: 2,
      level: 1,
      reuse_receiver: 0,
      receiver: { alarmgroup: [1] },
    };
    const disabled = await createTask({ upgrade: { enable: false, strategies: [disabledUpgrade] } });
    // Act
    const a = (await api.get('/alarmtask/show', { query: await taskAuth(enabled) })).data.task;
    const b = (await api.get('/alarmtask/show', { query: await taskAuth(disabled) })).data.task;
    // Assert
    expect(a.workflow.reminds[0].receiver.alarmgroup).toEqual([
      { id: 2, name: group(2).name, remark: group(2).remark, receiver: group(2).receiver },
    ]);
    expect(a.upgrade.strategies[0].receiver.channels).toMatchObject({
      phone: [summary(4)],
      yachgroup: [{ webhook: 'y', secret: 's' }],
      webhook: { url: hook },
    });
    expect(b.upgrade).toEqual({ enable: false, strategies: [disabledUpgrade] });
  });

  it('reports template type 1 for a predefined template and 0 with the system default for none, effective per scene and channel', async () => {
    const predefined = await createTask({ template: { template_id: 1 } });
    const none = await createTask();
    const a = await api.get('/alarmtask/show', { query: await taskAuth(predefined) });
    const b = await api.get('/alarmtask/show', { query: await taskAuth(none) });
    expect(a.data.task.template).toMatchObject({ template_id: 1, type: 1, template: { id: 1 }, udf: {} });
    expect(b.data.task.template).toMatchObject({ template_id: 0, type: 0, template: { id: 0 }, udf: {} });
    const scenes = (t: {
      template: {
        template: { template: Record<string, Record<string, { type: number; template: string }>> };
      };
    }) => t.template.template.template;
    for (const task of [a.data.task, b.data.task]) {
      expect(Object.keys(scenes(task))).toEqual(['compressed', 'not_compress', 'upgrade', 'recovery']);
      for (const scene of Object.values(scenes(task))) {
        expect(Object.keys(scene).sort()).toEqual([
          'dinggroup',
          'dingworker',
          'email',
          'phone',
          'sms',
          'wechat',
          'yachgroup',
          'yachworker',
        ]);
        for (const e of Object.values(scene)) expect(typeof e.template).toBe('string');
      }
    }
    // The fixture's predefined template has a compressed e-mail entry: type 1 there, 0 elsewhere.
    expect(scenes(a.data.task).compressed.email.type).toBe(1);
    expect(scenes(a.data.task).upgrade.email.type).toBe(0);
    expect(
      new Set(Object.values(scenes(b.data.task)).flatMap((s) => Object.values(s).map((e) => e.type))),
    ).toEqual(new Set([0]));
  });

  it('computes the pinyin of a Chinese name', async () => {
    const t = await createTask({ name: `日志中心-${uniqueTaskName('py')}` });
    const res = await api.get('/alarmtask/show', { query: await taskAuth(t) });
    expect(res.data.task.pinyin).toBe(`rizhizhongxin-${t.name.split('-').slice(1).join('-')}`);
  });

  it('sends a PING to a webhook configured at creation', async () => {
    const receiver = await new TestReceiver().start();
    try {
      const t = await createTask({ receiver: { channels: { webhook: `${receiver.url}/ping` } } });
      await receiver.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
      const ping = receiver.events('PING')[0];
      expect(ping.json).toEqual({ event: 'PING', type: 'ping', data: {}, extra: {} });
      expect(ping.path).toBe('/ping');
      expect(t.id).toBeGreaterThan(0);
    } finally {
      await receiver.stop();
    }
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
