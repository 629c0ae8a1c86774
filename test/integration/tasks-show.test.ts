import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, taskAuth } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createTask, taskBody, uniqueTaskName } from '../support/tasks.ts';
import { dept, group, person, summary, tag, template } from '../support/fixture.ts';

const store = (body: Record<string, unknown>) => api.post('/alarmtask/store', body);
const cond = (operator: string, threshold?: string) => ({
  rule: [{ field: 'ctn.host', operator, ...(threshold !== undefined ? { threshold } : {}) }],
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
