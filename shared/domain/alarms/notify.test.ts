import { beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { isSealed } from '../auth/seal.ts';
import type { AlarmGroup } from '../directory/model.ts';
import type { ReceiverSet } from '../notifications/receivers.ts';
import type { ReceiverConfig } from '../../contracts/receivers.ts';
import { openRobot } from '../channels/robots.ts';
import { noticeJobs, selectedReceivers, selectReceivers, taskContext } from './notify.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  resetConfig();
});

const facts = (ctn: Record<string, unknown>, level = 1) => ({ ctn, level, notice_time: 1_700_000_000 });
const when = (field: string, threshold: string) => [{ rule: [{ field, operator: 'eq', threshold }] }];

const receiver = (mode?: 1 | 2): ReceiverConfig => ({
  alarmgroup: [1],
  channels: { email: [3] },
  mode,
  dispatch: [
    { conditions: when('ctn.app', 'pay'), receiver: { channels: { sms: [4] } } },
    { conditions: when('level', '3'), receiver: { channels: { phone: [5] } } },
    { conditions: when('ctn.app', 'pay'), receiver: { alarmgroup: [2] } },
  ],
});

describe('selectReceivers: dispatch (API guide §9.7)', () => {
  it.each<
    [string, 1 | 2 | undefined, Record<string, unknown>, number, { dispatch: number[]; defaults: boolean }]
  >([
    ['lazy: first matching item only, no defaults', 1, { app: 'pay' }, 3, { dispatch: [0], defaults: false }],
    ['lazy is the default mode', undefined, { app: 'pay' }, 3, { dispatch: [0], defaults: false }],
    [
      'lazy: a later item when the first does not match',
      1,
      { app: 'web' },
      3,
      { dispatch: [1], defaults: false },
    ],
    ['lazy: no match -> defaults', 1, { app: 'web' }, 1, { dispatch: [], defaults: true }],
    [
      'non-lazy: every matching item and the defaults',
      2,
      { app: 'pay' },
      3,
      { dispatch: [0, 1, 2], defaults: true },
    ],
    ['non-lazy: some items and the defaults', 2, { app: 'pay' }, 1, { dispatch: [0, 2], defaults: true }],
    ['non-lazy: no match -> defaults', 2, { app: 'web' }, 0, { dispatch: [], defaults: true }],
  ])('%s', (_name, mode, ctn, level, expected) => {
    expect(selectReceivers(receiver(mode), facts(ctn, level))).toEqual({ override: false, ...expected });
  });

  it('a report override replaces the task receivers and dispatch', () => {
    const override: ReceiverConfig = { channels: { email: [9] } };
    const sel = selectReceivers(receiver(2), facts({ app: 'pay' }), override);
    expect(sel).toEqual({ override: true, dispatch: [], defaults: false });
    expect(selectedReceivers(receiver(2), sel, override)).toEqual([{ ...override, set: 'override' }]);
  });

  it('a task without dispatch notifies its defaults', () => {
    const r: ReceiverConfig = { channels: { email: [1] } };
    expect(selectReceivers(r, facts({}))).toEqual({ override: false, dispatch: [], defaults: true });
    expect(selectedReceivers(r, { override: false, dispatch: [], defaults: true })).toEqual([
      { alarmgroup: undefined, channels: { email: [1] }, set: 'default' },
    ]);
  });

  it('selectedReceivers maps a selection to receiver sets keyed by origin, defaults last', () => {
    const r = receiver(2);
    expect(selectedReceivers(r, { override: false, dispatch: [0, 2], defaults: true })).toEqual([
      { channels: { sms: [4] }, set: 'd0' },
      { alarmgroup: [2], set: 'd2' },
      { alarmgroup: [1], channels: { email: [3] }, set: 'default' },
    ]);
  });
});

describe('noticeJobs', () => {
  const groups: AlarmGroup[] = [
    {
      id: 1,
      name: 'g1',
      remark: '',
      receiver: { channels: { email: [1, 2] } },
      created_at: 0,
      updated_at: 0,
    },
    { id: 2, name: 'g2', remark: '', receiver: { channels: { sms: [4, 6] } }, created_at: 0, updated_at: 0 },
  ];
  const task = {
    id: 12,
    name: 'orders',
    compress: {
      enable: true,
      method: 4 as const,
      strategy: 3 as const,
      strategy_cycle: 1,
      strategy_count: 2,
    },
  };

  it('pages whoever a named schedule has on call, merged with the rest; nobody on call gets a skipped job', async () => {
    // Arrange: the defaults name schedule 7 (uid 3 on call) and schedule 8 (nobody)
    const asked: number[][] = [];
    const resolveOncall = async (receivers: { schedule_id: number }[], at: number) => {
      asked.push(receivers.map((r) => r.schedule_id));
      return [
        {
          schedule_id: 7,
          at,
          uids: [3],
          source: { kind: 'layer' as const, layer: 0, name: 'l' },
          shift: { start: 0, end: 9 },
          channels: ['email' as const],
        },
        {
          schedule_id: 8,
          at,
          uids: [],
          source: { kind: 'none' as const },
          shift: { start: 0, end: 9 },
          channels: ['sms' as const],
        },
      ];
    };
    const receivers = selectedReceivers(
      {
        channels: { email: [1, 3] },
        oncall: [
          { schedule_id: 7, channels: ['email'] },
          { schedule_id: 8, channels: ['sms'] },
        ],
      },
      { override: false, dispatch: [], defaults: true },
    );
    // Act
    const jobs = await noticeJobs(
      {
        task,
        receivers,
        scene: 'not_compress',
        jobId: 'u-2:not_compress',
        history: {},
        context: {},
        event: {
          body: { event: 'ALARM', type: 'compress_disable', data: {}, extra: {} },
          eventId: 'u-2:ALARM',
        },
      },
      { getAlarmGroups: async () => [], resolveOncall },
    );
    // Assert
    expect(asked).toEqual([[7, 8]]);
    expect(jobs.map((j) => [j.job_id, j.users, j.oncall?.map((a) => a.schedule_id)])).toEqual([
      ['u-2:not_compress:email', [1, 3], [7]],
      ['u-2:not_compress:sms:s8', [], [8]],
    ]);
  });

  it('one job per channel, alarm groups merged and users de-duplicated, deterministic ids', async () => {
    const requested: number[][] = [];
    const jobs = await noticeJobs(
      {
        task,
        receivers: [
          { channels: { sms: [4] } },
          { alarmgroup: [2] },
          { alarmgroup: [1], channels: { email: [3, 1] } },
        ],
        scene: 'compressed',
        jobId: 'u-1:compressed',
        history: { id: 5 },
        context: { type: 'compressed' },
        event: { body: { event: 'ALARM', type: 'compressed', data: {}, extra: {} }, eventId: 'u-1:ALARM' },
      },
      {
        getAlarmGroups: async (ids) => {
          requested.push(ids);
          return groups.filter((g) => ids.includes(g.id));
        },
      },
    );
    expect(requested).toEqual([[2, 1]]);
    expect(jobs.map((j) => [j.job_id, j.channel, j.users])).toEqual([
      ['u-1:compressed:sms', 'sms', [4, 6]],
      ['u-1:compressed:email', 'email', [3, 1, 2]],
    ]);
    expect(jobs[0]).toMatchObject({
      kind: 'notify',
      task_id: 12,
      scene: 'compressed',
      context: {
        task: { id: 12, name: 'orders', compress_method: 'full', compress_type: 'cycle-count' },
        history: { id: 5 },
        context: { type: 'compressed' },
      },
    });
  });

  describe('robots per receiver set (API guide §9.7)', () => {
    const cond = (field: string, operator: string, threshold: string) => [
      { rule: [{ field, operator, threshold }] },
    ];
    const ding = (...webhooks: string[]) => ({ dinggroup: webhooks.map((webhook) => ({ webhook })) });
    // An example task: defaults dinggroup [C]; env eq prod -> [A]; sev gt 3 -> [B].
    const issueTask = (mode: 1 | 2): ReceiverConfig => ({
      mode,
      channels: ding('C'),
      dispatch: [
        { conditions: cond('ctn.env', 'eq', 'prod'), receiver: { channels: ding('A') } },
        { conditions: cond('ctn.sev', 'gt', '3'), receiver: { channels: ding('B') } },
      ],
    });
    const group = (id: number, channels: ReceiverConfig['channels']): AlarmGroup => ({
      id,
      name: `g${id}`,
      remark: '',
      receiver: { channels },
      created_at: 0,
      updated_at: 0,
    });
    const groups = [group(3, ding('G', 'H')), group(4, { ...ding('A'), email: [7] })];

    it.each<
      [string, ReceiverConfig, Record<string, unknown>, ReceiverConfig | undefined, [string, string[]][]]
    >([
      [
        'non-lazy: every matching item and the defaults, each its own job',
        issueTask(2),
        { env: 'prod', sev: 10 },
        undefined,
        [
          ['p:dinggroup:d0', ['A']],
          ['p:dinggroup:d1', ['B']],
          ['p:dinggroup:default', ['C']],
        ],
      ],
      [
        'non-lazy: keys name the item, not its position among the matches',
        issueTask(2),
        { env: 'dev', sev: 10 },
        undefined,
        [
          ['p:dinggroup:d1', ['B']],
          ['p:dinggroup:default', ['C']],
        ],
      ],
      [
        'lazy: the first matching item only',
        issueTask(1),
        { env: 'prod', sev: 10 },
        undefined,
        [['p:dinggroup:d0', ['A']]],
      ],
      [
        'lazy: a later item when the first does not match',
        issueTask(1),
        { env: 'dev', sev: 10 },
        undefined,
        [['p:dinggroup:d1', ['B']]],
      ],
      [
        'no item matches: the defaults',
        issueTask(2),
        { env: 'dev', sev: 1 },
        undefined,
        [['p:dinggroup:default', ['C']]],
      ],
      [
        'a report override replaces every task set',
        issueTask(2),
        { env: 'prod', sev: 10 },
        { channels: ding('O', 'P') },
        [['p:dinggroup:override', ['O', 'P']]],
      ],
      [
        "an alarm group's robots are a set of their own, failover order kept",
        { mode: 2, alarmgroup: [3], channels: ding('C') },
        {},
        undefined,
        [
          ['p:dinggroup:default', ['C']],
          ['p:dinggroup:g3', ['G', 'H']],
        ],
      ],
      [
        'a robot named by two sets goes out once, with the first set that names it',
        { ...issueTask(2), channels: ding('A', 'C') },
        { env: 'prod', sev: 10 },
        undefined,
        [
          ['p:dinggroup:d0', ['A']],
          ['p:dinggroup:d1', ['B']],
          ['p:dinggroup:default', ['C']],
        ],
      ],
      [
        'a set whose robots all went out with earlier sets has no job',
        { ...issueTask(2), alarmgroup: [4] },
        { env: 'prod', sev: 1 },
        undefined,
        [
          ['p:email', []],
          ['p:dinggroup:d0', ['A']],
          ['p:dinggroup:default', ['C']],
        ],
      ],
      [
        'an alarm group named by two sets is one set, where it is first named',
        {
          mode: 2,
          alarmgroup: [3],
          channels: ding('C'),
          dispatch: [{ conditions: cond('ctn.env', 'eq', 'prod'), receiver: { alarmgroup: [3] } }],
        },
        { env: 'prod' },
        undefined,
        [
          ['p:dinggroup:g3', ['G', 'H']],
          ['p:dinggroup:default', ['C']],
        ],
      ],
      [
        'yach robots are grouped the same way, apart from ding robots',
        {
          mode: 2,
          channels: { yachgroup: [{ webhook: 'A' }], ...ding('A') },
          dispatch: [{ conditions: cond('ctn.env', 'eq', 'prod'), receiver: { channels: ding('A') } }],
        },
        { env: 'prod' },
        undefined,
        [
          ['p:dinggroup:d0', ['A']],
          ['p:yachgroup:default', ['A']],
        ],
      ],
    ])('%s', async (_name, config, ctn, override, expected) => {
      // Arrange
      const selection = selectReceivers(config, { ctn, level: 0, notice_time: 0 }, override);
      // Act
      const jobs = await noticeJobs(
        {
          task,
          receivers: selectedReceivers(config, selection, override),
          scene: 'not_compress',
          jobId: 'p',
          history: {},
          context: {},
          event: { body: { event: 'ALARM', type: 'compress_disable', data: {}, extra: {} }, eventId: 'p' },
        },
        { getAlarmGroups: async (ids) => groups.filter((g) => ids.includes(g.id)) },
      );
      // Assert
      expect(jobs.map((j) => [j.job_id, (j.robots ?? []).map((r) => openRobot(r).webhook)])).toEqual(
        expected,
      );
      // The jobs carry their robots sealed (the configurations here were written in plain).
      const robots = jobs.flatMap((j) => j.robots ?? []);
      expect(robots.every((r) => isSealed(r.webhook) && (r.secret === undefined || isSealed(r.secret)))).toBe(
        true,
      );
    });

    it('people stay merged over the sets (one job per channel, plain id) while robots split', async () => {
      // Arrange
      const config: ReceiverConfig = {
        mode: 2,
        alarmgroup: [4],
        channels: { ...ding('C'), email: [7, 8] },
        dispatch: [
          {
            conditions: cond('ctn.env', 'eq', 'prod'),
            receiver: { channels: { ...ding('A'), email: [9, 7] } },
          },
        ],
      };
      const selection = selectReceivers(config, { ctn: { env: 'prod' }, level: 0, notice_time: 0 });
      // Act
      const jobs = await noticeJobs(
        {
          task,
          receivers: selectedReceivers(config, selection),
          scene: 'not_compress',
          jobId: 'p',
          history: {},
          context: {},
          event: { body: { event: 'ALARM', type: 'compress_disable', data: {}, extra: {} }, eventId: 'p' },
        },
        { getAlarmGroups: async (ids) => groups.filter((g) => ids.includes(g.id)) },
      );
      // Assert
      expect(jobs.map((j) => [j.job_id, j.users ?? j.robots?.map((r) => openRobot(r).webhook)])).toEqual([
        ['p:email', [9, 7, 8]],
        ['p:dinggroup:d0', ['A']],
        ['p:dinggroup:default', ['C']],
      ]);
    });

    it.each<[string, ReceiverSet[], string[]]>([
      [
        'plain configurations are keyed by position',
        [{ channels: ding('M') }, { channels: ding('N') }],
        ['p:dinggroup:r0', 'p:dinggroup:r1'],
      ],
      [
        'an unknown or repeated key falls back to the position',
        [
          { channels: ding('M'), set: 'x'.repeat(500) },
          { channels: ding('N'), set: 'default' },
          { channels: ding('O'), set: 'default' },
        ],
        ['p:dinggroup:r0', 'p:dinggroup:default', 'p:dinggroup:r2'],
      ],
    ])('%s', async (_name, receivers, expected) => {
      // Act
      const jobs = await noticeJobs(
        {
          task,
          receivers,
          scene: 'upgrade',
          jobId: 'p',
          history: {},
          context: {},
          event: { body: { event: 'UPGRADE', type: 'upgrade', data: {}, extra: {} }, eventId: 'p' },
        },
        { getAlarmGroups: async () => [] },
      );
      // Assert
      expect(jobs.map((j) => j.job_id)).toEqual(expected);
    });
  });

  it('no receivers, no jobs (and no directory read)', async () => {
    const jobs = await noticeJobs(
      {
        task,
        receivers: [],
        scene: 'upgrade',
        jobId: 'x',
        history: {},
        context: {},
        event: { body: { event: 'UPGRADE', type: 'upgrade', data: {}, extra: {} }, eventId: 'x' },
      },
      {
        getAlarmGroups: async () => {
          throw new Error('not expected');
        },
      },
    );
    expect(jobs).toEqual([]);
  });

  it('taskContext names the compression method and type, none when off', () => {
    expect(taskContext({ id: 1, name: 'n', compress: { enable: false, method: 1 } })).toEqual({
      id: 1,
      name: 'n',
      compress_method: 'none',
      compress_type: 'none',
    });
  });
});
