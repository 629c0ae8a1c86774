import { describe, expect, it } from 'vitest';
import type { AlarmGroup } from '../directory/model.ts';
import type { ReceiverConfig } from '../tasks/model.ts';
import { noticeJobs, selectedReceivers, selectReceivers, taskContext } from './notify.ts';

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

describe('selectReceivers: dispatch (behavior 7.6)', () => {
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
    expect(selectedReceivers(receiver(2), sel, override)).toEqual([override]);
  });

  it('a task without dispatch notifies its defaults', () => {
    const r: ReceiverConfig = { channels: { email: [1] } };
    expect(selectReceivers(r, facts({}))).toEqual({ override: false, dispatch: [], defaults: true });
    expect(selectedReceivers(r, { override: false, dispatch: [], defaults: true })).toEqual([
      { alarmgroup: undefined, channels: { email: [1] } },
    ]);
  });

  it('selectedReceivers maps a selection to the receiver configurations, defaults last', () => {
    const r = receiver(2);
    expect(selectedReceivers(r, { override: false, dispatch: [0, 2], defaults: true })).toEqual([
      { channels: { sms: [4] } },
      { alarmgroup: [2] },
      { alarmgroup: [1], channels: { email: [3] } },
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

  it('non-lazy dispatch: every matching item and the defaults get their robots, each set its own job (behavior 7.6)', async () => {
    // Arrange: the case: defaults dinggroup [C]; items env eq prod -> [A], sev gt 3 -> [B]; mode 2
    const rule = (field: string, operator: string, threshold: string) => [
      { rule: [{ field, operator, threshold }] },
    ];
    const receiver: ReceiverConfig = {
      mode: 2 as const,
      channels: { dinggroup: [{ webhook: 'C', secret: 's' }] },
      dispatch: [
        {
          conditions: rule('ctn.env', 'eq', 'prod'),
          receiver: { channels: { dinggroup: [{ webhook: 'A' }] } },
        },
        { conditions: rule('ctn.sev', 'gt', '3'), receiver: { channels: { dinggroup: [{ webhook: 'B' }] } } },
      ],
    };
    const selection = selectReceivers(receiver, { ctn: { env: 'prod', sev: 10 }, level: 0, notice_time: 0 });
    // Act
    const jobs = await noticeJobs(
      {
        task,
        receivers: selectedReceivers(receiver, selection),
        scene: 'not_compress',
        jobId: 'u-2:not_compress',
        history: {},
        context: {},
        event: {
          body: { event: 'ALARM', type: 'compress_disable', data: {}, extra: {} },
          eventId: 'u-2:ALARM',
        },
      },
      { getAlarmGroups: async () => [] },
    );
    // Assert
    expect(jobs.map((j) => [j.job_id, j.robots?.map((r) => r.webhook)])).toEqual([
      ['u-2:not_compress:dinggroup:r0', ['A']],
      ['u-2:not_compress:dinggroup:r1', ['B']],
      ['u-2:not_compress:dinggroup:r2', ['C']],
    ]);
  });

  it.each([
    [
      'a robot named by two sets goes out once, with the first',
      [
        { channels: { yachgroup: [{ webhook: 'X' }, { webhook: 'Y' }] } },
        { channels: { yachgroup: [{ webhook: 'Y' }] } },
      ],
      [['p:yachgroup', ['X', 'Y']]],
    ],
    [
      "an alarm group's robots are a set of their own",
      [{ alarmgroup: [3], channels: { dinggroup: [{ webhook: 'M' }] } }],
      [
        ['p:dinggroup:r0', ['M']],
        ['p:dinggroup:r0.g3', ['G']],
      ],
    ],
    [
      'a single set keeps the plain job id',
      [{ channels: { dinggroup: [{ webhook: 'M' }, { webhook: 'N' }] } }],
      [['p:dinggroup', ['M', 'N']]],
    ],
  ])('%s', async (_name, receivers, expected) => {
    const jobs = await noticeJobs(
      {
        task,
        receivers: receivers as ReceiverConfig[],
        scene: 'upgrade',
        jobId: 'p',
        history: {},
        context: {},
        event: { body: { event: 'UPGRADE', type: 'upgrade', data: {}, extra: {} }, eventId: 'p' },
      },
      {
        getAlarmGroups: async () => [
          {
            id: 3,
            name: 'g',
            remark: '',
            receiver: { channels: { dinggroup: [{ webhook: 'G' }] } },
            created_at: 0,
            updated_at: 0,
          },
        ],
      },
    );
    expect(jobs.map((j) => [j.job_id, j.robots?.map((r) => r.webhook)])).toEqual(expected);
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
