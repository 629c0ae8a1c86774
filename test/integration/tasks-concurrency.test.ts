import { describe, expect, it } from 'vitest';
import { api, taskAuth } from '../support/client.ts';
import { createTask, uniqueTaskName } from '../support/tasks.ts';

/**
 * API guide §5.6: concurrent partial updates of different fields of one task must all survive. Each
 * request names one path; they all run at once against the same task.
 */
// biome-ignore lint/suspicious/noExplicitAny: the detail view under test
type Detail = Record<string, any>;

const cond = [{ rule: [{ field: 'ctn.host', operator: 'eq', threshold: 'a' }] }];

/** [path, request body part, where to read the new value back in the task detail, the value]. */
function updates(name: string): [string, Record<string, unknown>, (t: Detail) => unknown, unknown][] {
  return [
    ['name', { name }, (t) => t.name, name],
    ['flag_save_db', { flag_save_db: 0 }, (t) => t.flag_save_db, 0],
    ['task_tags', { task_tags: [2] }, (t) => t.task_tags.map((x: { id: number }) => x.id), [2]],
    ['department_id', { department_id: 2 }, (t) => t.department_id, 2],
    [
      'permission.ro',
      { permission: { ro: [3] } },
      (t) => t.permission.ro.map((p: { uid: number }) => p.uid),
      [3],
    ],
    [
      'receiver.alarmgroup',
      { receiver: { alarmgroup: [2] } },
      (t) => t.receiver.alarmgroup.map((g: { id: number }) => g.id),
      [2],
    ],
    ['receiver.mode', { receiver: { mode: 2 } }, (t) => t.receiver.mode, 2],
    [
      'receiver.channels.sms',
      { receiver: { channels: { sms: [4] } } },
      (t) => t.receiver.channels.sms.map((u: { uid: number }) => u.uid),
      [4],
    ],
    [
      'receiver.channels.phone',
      { receiver: { channels: { phone: [5] } } },
      (t) => t.receiver.channels.phone.map((u: { uid: number }) => u.uid),
      [5],
    ],
    [
      'receiver.channels.dingworker',
      { receiver: { channels: { dingworker: [2] } } },
      (t) => t.receiver.channels.dingworker.map((u: { uid: number }) => u.uid),
      [2],
    ],
    [
      'receiver.channels.yachworker',
      { receiver: { channels: { yachworker: [3] } } },
      (t) => t.receiver.channels.yachworker.map((u: { uid: number }) => u.uid),
      [3],
    ],
    [
      'receiver.channels.webhook',
      { receiver: { channels: { webhook: 'https://hooks.example.com/c' } } },
      (t) => t.receiver.channels.webhook.url,
      'https://hooks.example.com/c',
    ],
    [
      'filter',
      { filter: { enable: true, mode: 1, conditions: [{ ...cond[0], level: 9 }] } },
      (t) => t.filter.mode,
      1,
    ],
    [
      'upgrade',
      { upgrade: { enable: true, strategies: [{ interval: 5, count: 3, level: 2, reuse_receiver: 1 }] } },
      (t) => t.upgrade.strategies[0].count,
      3,
    ],
    [
      'compress',
      { compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 7 } },
      (t) => t.compress.strategy_cycle,
      7,
    ],
    [
      'recovery',
      { recovery: { enable: true, mode: 2, delay_interval: 9 } },
      (t) => t.recovery.delay_interval,
      9,
    ],
    ['workflow', { workflow: { enable: true, reminds: [] } }, (t) => t.workflow.enable, true],
    ['template', { template: { template_id: 1 } }, (t) => t.template.template_id, 1],
    [
      'receiver.channels.wechat',
      { receiver: { channels: { wechat: [6] } } },
      (t) => t.receiver.channels.wechat.map((u: { uid: number }) => u.uid),
      [6],
    ],
    [
      'receiver.dispatch',
      { receiver: { dispatch: [{ conditions: cond, receiver: { channels: { email: [2] } } }] } },
      (t) => t.receiver.dispatch.length,
      1,
    ],
  ];
}

describe('concurrent partial updates (API guide §5.6)', () => {
  it.each([10, 20])('%i updatefields at once on different fields all succeed and all survive', async (n) => {
    // Arrange
    const t = await createTask({ receiver: { channels: { email: [1] } } });
    const todo = updates(uniqueTaskName('renamed')).slice(0, n);
    // Act
    const answers = await Promise.all(
      todo.map(async ([path, part]) =>
        api.put('/alarmtask/updatefields', { ...part, filter_fields: [path], ...(await taskAuth(t)) }),
      ),
    );
    const show = await api.get('/alarmtask/show', { query: await taskAuth(t) });
    // Assert
    expect(answers.map((a) => [a.code, a.msg])).toEqual(todo.map(() => [0, 'success']));
    const task = show.data.task;
    for (const [path, , read, value] of todo) expect([path, read(task)]).toEqual([path, value]);
  });
});
