import { describe, expect, it } from 'vitest';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { testTask } from '../tasks/test-task.ts';
import { explainAlarm, WHY_MAX } from './explain.ts';
import { planAlarm } from './model.ts';

const alarm = (ctn: Record<string, unknown>, over: Partial<AlarmMessage> = {}): AlarmMessage => ({
  kind: 'alarm',
  uuid: 'u',
  task_id: 42,
  level: 1,
  ctn,
  notice_time: 1_700_000_000,
  reported_at: 1_700_000_000,
  ...over,
});

const rule = (field: string, operator: string, threshold?: string) => ({
  field,
  operator,
  ...(threshold !== undefined ? { threshold } : {}),
});

/** The reasons must agree with the decision planAlarm took, for every stage. */
describe('explainAlarm', () => {
  it('a plain task: only the configuration version', () => {
    const task = testTask({ version: 7 });
    const a = alarm({ x: 1 });
    expect(explainAlarm(task, a, planAlarm(task, a))).toEqual({ task_version: 7 });
  });

  it('recovery condition: the matching condition with the values its rules saw; nothing after it', () => {
    const task = testTask({
      recovery: { enable: true, mode: 1, conditions: [{ rule: [rule('ctn.state', 'eq', 'ok')] }] },
      filter: { enable: true, mode: 1, conditions: [] },
    });
    const a = alarm({ state: 'ok' });
    const why = explainAlarm(task, a, planAlarm(task, a));
    expect(why.recovery).toEqual({
      mode: 'condition',
      match: {
        index: 0,
        rules: [{ field: 'ctn.state', operator: 'eq', threshold: 'ok', value: 'ok', ok: true }],
      },
      misses: [],
      conditions: 1,
    });
    expect(why.filter).toBeUndefined();
  });

  it.each([
    ['whitelist, matched: kept, level overridden', 1, { app: 'pay' }, true, 3],
    ['whitelist, no match: dropped', 1, { app: 'web' }, false, 1],
    ['blacklist, matched: dropped', 2, { app: 'pay' }, false, 3],
    ['blacklist, no match: kept', 2, { app: 'web' }, true, 1],
  ] as const)('filter %s', (_name, mode, ctn, kept, level) => {
    const task = testTask({
      filter: { enable: true, mode, conditions: [{ rule: [rule('ctn.app', 'eq', 'pay')], level: 3 }] },
    });
    const a = alarm(ctn);
    const plan = planAlarm(task, a);
    const why = explainAlarm(task, a, plan);
    expect(why.filter).toMatchObject({
      mode: mode === 1 ? 'whitelist' : 'blacklist',
      kept,
      level_from: 1,
      level_to: level,
    });
    expect(plan.kind === 'drop').toBe(!kept);
    // A miss names the rule that failed and what it saw.
    if (ctn.app === 'web')
      expect(why.filter?.misses).toEqual([
        {
          index: 0,
          rules: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay', value: 'web', ok: false }],
        },
      ]);
  });

  it('a missing field is shown as such, and a long value is cut', () => {
    const task = testTask({
      filter: {
        enable: true,
        mode: 1,
        conditions: [
          { rule: [rule('ctn.host', 'isset')], level: 9 },
          { rule: [rule('ctn.msg', 'eq', 'x')], level: 9 },
        ],
      },
    });
    const a = alarm({ msg: 'y'.repeat(500) });
    const why = explainAlarm(task, a, planAlarm(task, a));
    expect(why.filter?.misses[0]).toEqual({
      index: 0,
      rules: [{ field: 'ctn.host', operator: 'isset', ok: false }],
    });
    expect(why.filter?.misses[1].rules[0].value).toHaveLength(120);
  });

  it('compression by condition and lazy dispatch: the matched condition and item, the items tried before', () => {
    const task = testTask({
      compress: {
        enable: true,
        method: 1,
        strategy: 5,
        strategy_cycle: 10,
        strategy_count: 3,
        conditions: [{ rule: [rule('ctn.host', 'eq-self')] }],
      },
      receiver: {
        channels: { email: [1] },
        dispatch: [
          { conditions: [{ rule: [rule('level', 'gte', '3')] }], receiver: { channels: { sms: [2] } } },
          { conditions: [{ rule: [rule('ctn.team', 'eq', 'db')] }], receiver: { channels: { sms: [3] } } },
          { conditions: [{ rule: [rule('ctn.team', 'isset')] }], receiver: { channels: { sms: [4] } } },
        ],
      },
    });
    const a = alarm({ host: 'h1', team: 'db' });
    const why = explainAlarm(task, a, planAlarm(task, a));
    expect(why.compress).toMatchObject({
      method: 'condition',
      strategy: 'count',
      cycle_minutes: 10,
      count: 3,
      match: { index: 0, rules: [{ field: 'ctn.host', operator: 'eq-self', value: 'h1', ok: true }] },
    });
    expect(why.dispatch).toEqual({
      mode: 'lazy',
      items: 3,
      matched: [
        { index: 1, rules: [{ field: 'ctn.team', operator: 'eq', threshold: 'db', value: 'db', ok: true }] },
      ],
      misses: [
        { index: 0, rules: [{ field: 'level', operator: 'gte', threshold: '3', value: '1', ok: false }] },
      ],
    });
  });

  it('a report that names its own receiver skips dispatch; a monitor recovery says so', () => {
    const task = testTask({ receiver: { channels: {}, dispatch: [{ conditions: [], receiver: {} }] } });
    const own = alarm({}, { receiver: { channels: { email: [2] } } });
    expect(explainAlarm(task, own, planAlarm(task, own))).toEqual({ task_version: 1, override: true });
    const resolved = alarm({}, { recovery: true });
    expect(explainAlarm(task, resolved, planAlarm(task, resolved)).recovery).toEqual({ mode: 'monitor' });
  });
});

describe('explainAlarm on a huge configuration', () => {
  it('stays within WHY_MAX: misses left out first, then all but the first rule of each match', () => {
    // Arrange: 40 non-lazy dispatch items of 30 rules each, all matching, and long values
    const long = 'x'.repeat(500);
    const rules = Array.from({ length: 30 }, (_, i) => rule(`ctn.f${i}`, 'isset'));
    const task = testTask({
      receiver: {
        channels: {},
        mode: 2,
        dispatch: Array.from({ length: 40 }, () => ({ conditions: [{ rule: rules }], receiver: {} })),
      },
    });
    const a = alarm(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, long])));
    // Act
    const why = explainAlarm(task, a, planAlarm(task, a));
    // Assert
    expect(JSON.stringify(why).length).toBeLessThanOrEqual(WHY_MAX);
    expect(why.trimmed).toBe(true);
    expect(why.dispatch?.matched[0]).toMatchObject({ index: 0, rules: [{ field: 'ctn.f0', ok: true }] });
  });

  it('stays within WHY_MAX when the filter decides (dropped) and when a recovery condition does', () => {
    // Arrange: a blacklist and a recovery condition of 60 matching rules each, and long values
    const long = 'x'.repeat(500);
    const rules = Array.from({ length: 60 }, (_, i) => rule(`ctn.f${i}`, 'isset'));
    const ctn = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`f${i}`, long]));
    const filtering = testTask({
      filter: { enable: true, mode: 2, conditions: [{ rule: rules, level: 1 }] },
    });
    const recovering = testTask({ recovery: { enable: true, mode: 1, conditions: [{ rule: rules }] } });
    const a = alarm(ctn);
    // Act
    const dropped = planAlarm(filtering, a);
    const recovered = planAlarm(recovering, a);
    const whys = [explainAlarm(filtering, a, dropped), explainAlarm(recovering, a, recovered)];
    // Assert
    expect([dropped.kind, recovered.kind]).toEqual(['drop', 'recovery']);
    for (const why of whys) {
      expect(JSON.stringify(why).length).toBeLessThanOrEqual(WHY_MAX);
      expect(why.trimmed).toBe(true);
    }
    expect(whys[0].filter?.match?.rules).toEqual([expect.objectContaining({ field: 'ctn.f0', ok: true })]);
  });
});
