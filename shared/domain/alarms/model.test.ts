import { describe, expect, it } from 'vitest';
import { testTask } from '../tasks/test-task.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { computeMetric } from './compress.ts';
import { advanceMetric, type GroupInput, type MetricState, planAlarm } from './model.ts';

const alarm = (ctn: Record<string, unknown>, level: 0 | 1 | 2 | 3 = 1): AlarmMessage => ({
  kind: 'alarm',
  uuid: 'u-1',
  task_id: 42,
  level,
  ctn,
  notice_time: 1_700_000_000,
  reported_at: 1_700_000_000,
});

const full = {
  enable: true,
  method: 4 as const,
  strategy: 1 as const,
  strategy_cycle: 1,
  not_match: 1 as const,
};
const byApp = {
  ...full,
  method: 1 as const,
  conditions: [{ rule: [{ field: 'ctn.app', operator: 'eq-self' }] }],
};
const recovery = {
  enable: true,
  mode: 1 as const,
  conditions: [{ rule: [{ field: 'ctn.status', operator: 'eq', threshold: 'ok' }] }],
};
const whitelist = {
  enable: true,
  mode: 1 as const,
  not_match: 1 as const,
  conditions: [{ rule: [{ field: 'ctn.app', operator: 'in', threshold: 'pay|web' }], level: 3 }],
};

describe('planAlarm: recovery -> filter -> compress (API guide §9.2-§9.4)', () => {
  it.each([
    ['stored, compression off', {}, { app: 'pay' }, 'compress_disable'],
    ['not stored', { flag_save_db: 0 as const }, { app: 'pay' }, 'not_save_db'],
    [
      'not stored, even with compression on',
      { flag_save_db: 0 as const, compress: full },
      { app: 'pay' },
      'not_save_db',
    ],
    ['compressed', { compress: full }, { app: 'pay' }, 'compressed'],
    ['compression matched nothing, not_match 1', { compress: byApp }, { other: 1 }, 'compress_not_match'],
    [
      'compression matched nothing, not_match 0',
      { compress: { ...byApp, not_match: 0 as const } },
      { x: 1 },
      'not_match_stored',
    ],
    ['whitelist rejects, not_match 1 stores', { filter: whitelist }, { app: 'db' }, 'rejected'],
    [
      'whitelist rejects, not_match 0 drops',
      { filter: { ...whitelist, not_match: 0 as const } },
      { app: 'db' },
      'drop',
    ],
    [
      'rejected by a task that does not store: dropped',
      { filter: whitelist, flag_save_db: 0 as const },
      { app: 'db' },
      'drop',
    ],
    [
      'blacklist rejects on match',
      { filter: { ...whitelist, mode: 2 as const } },
      { app: 'pay' },
      'rejected',
    ],
    ['recovery before the filter', { recovery, filter: whitelist }, { status: 'ok', app: 'db' }, 'recovery'],
    [
      'recovery delay mode is not a condition recovery',
      { recovery: { ...recovery, mode: 2 as const } },
      { status: 'ok' },
      'compress_disable',
    ],
  ])('%s -> %s', (_name, overrides, ctn, kind) => {
    expect(planAlarm(testTask(overrides), alarm(ctn)).kind).toBe(kind);
  });

  it("a monitor's recovery goes through the filter as its firing alert did, and reaches its metric", () => {
    const monitorRecovery = (ctn: Record<string, unknown>) => ({ ...alarm(ctn, 0), recovery: true as const });
    // Whitelisted: a recovery at the filter's level, under the metric its firing alert had
    const task = testTask({ filter: whitelist, compress: full });
    const fired = planAlarm(task, alarm({ app: 'pay' }, 0));
    expect(planAlarm(task, monitorRecovery({ app: 'pay' }))).toEqual({
      kind: 'recovery',
      level: 3,
      store: true,
      metric: (fired as { metric: string }).metric,
    });
    // Rejected by the filter: so is its recovery (stored without notification, or dropped)
    expect(planAlarm(task, monitorRecovery({ app: 'db' })).kind).toBe('rejected');
    const dropping = testTask({ filter: { ...whitelist, not_match: 0 as const } });
    expect(planAlarm(dropping, monitorRecovery({ app: 'db' })).kind).toBe('drop');
    // Without recovery conditions configured, and whatever they say
    expect(planAlarm(testTask({}), monitorRecovery({ x: 1 })).kind).toBe('recovery');
  });

  it('the filter level replaces the alarm level; compression sees the new level', () => {
    const task = testTask({
      filter: whitelist,
      compress: { ...byApp, conditions: [{ rule: [{ field: 'level', operator: 'eq', threshold: '3' }] }] },
    });
    const plan = planAlarm(task, alarm({ app: 'pay' }, 0));
    expect(plan).toMatchObject({ kind: 'compressed', level: 3 });
  });

  it('a recovery carries its metric when compression is on, and whether it is stored', () => {
    const task = testTask({ recovery, compress: byApp });
    const plan = planAlarm(task, alarm({ status: 'ok', app: 'pay' }));
    expect(plan).toEqual({
      kind: 'recovery',
      level: 1,
      store: true,
      metric: computeMetric(42, byApp, {
        ctn: { status: 'ok', app: 'pay' },
        level: 1,
        notice_time: 1_700_000_000,
      }),
    });
    expect(planAlarm(testTask({ recovery, flag_save_db: 0 }), alarm({ status: 'ok' }))).toEqual({
      kind: 'recovery',
      level: 1,
      store: false,
      metric: undefined,
    });
  });
});

describe('advanceMetric: one group of alarms of a metric', () => {
  const base = (over: Partial<GroupInput> = {}): GroupInput => ({
    state: undefined,
    taskId: 42,
    metric: 'm',
    alarms: [
      { uuid: 'a', historyId: 11 },
      { uuid: 'b', historyId: 12 },
      { uuid: 'c', historyId: 13 },
    ],
    now: 60_000,
    strategy: { strategy: 4, cycleSeconds: 60, count: 2 },
    upgrades: [],
    buckets: new Map(),
    ...over,
  });

  it('creates the state at version 1 and walks the window in order', () => {
    const r = advanceMetric(base());
    expect(r.steps.map((s) => [s.uuid, s.k, s.batch, s.notify])).toEqual([
      ['a', 1, 11, 'none'],
      ['b', 2, 11, 'now'],
      ['c', 1, 13, 'none'],
    ]);
    expect(r.state).toMatchObject({ version: 1, last_uuid: 'c', last_at: 60_000, recovery_pending: false });
    expect(r.state.window).toMatchObject({ batch: 13, k: 1, opener: 'c' });
    expect(r.bucketAdd).toBe(0);
    expect(r.flushes).toEqual([]);
    expect(r.recoveryDueAt).toBeUndefined();
  });

  it('continues an existing window and bumps the version', () => {
    const state: MetricState = {
      task_id: 42,
      metric: 'm',
      version: 7,
      window: { batch: 5, start: 59_990, end: 60_050, k: 1, opener: 'z', closed: false },
      recovery_pending: false,
      upgrade_fired: {},
    };
    const r = advanceMetric(base({ state, alarms: [{ uuid: 'a', historyId: 11 }] }));
    expect(r.steps[0]).toMatchObject({ k: 2, batch: 5, notify: 'now', opened: false });
    expect(r.state.version).toBe(8);
    expect(state.version).toBe(7);
  });

  it('delay strategy: schedules one flush per window opened, at the window end', () => {
    const r = advanceMetric(base({ strategy: { strategy: 2, cycleSeconds: 300, count: 1 } }));
    expect(r.flushes).toEqual([{ uuid: 'a', batch: 11, dueAt: 60_300 }]);
    expect(r.steps.map((s) => s.notify)).toEqual(['deferred', 'none', 'none']);
  });

  it('upgrade: counts the group into the current minute and fires on the alarm that reaches the count', () => {
    const r = advanceMetric(
      base({
        upgrades: [{ interval: 5, count: 4, level: 3, reuse_receiver: 1 }],
        buckets: new Map([[999, 2]]),
      }),
    );
    expect(r.bucketAdd).toBe(3);
    expect(r.steps.map((s) => s.upgrades.map((u) => u.zcount))).toEqual([[], [4], []]);
    expect(r.state.upgrade_fired).toEqual({ '0.5.4': 60_000 });
  });

  it('delay recovery: arms one check per metric, at the first alarm, only when none is pending', () => {
    const r = advanceMetric(base({ recoveryDelay: 120 }));
    expect(r.recoveryDueAt).toBe(60_120);
    expect(r.state.recovery_pending).toBe(true);
    const again = advanceMetric(base({ state: r.state, recoveryDelay: 120, now: 60_010 }));
    expect(again.recoveryDueAt).toBeUndefined();
    expect(again.state).toMatchObject({ recovery_pending: true, last_at: 60_010, last_uuid: 'c' });
  });
});
