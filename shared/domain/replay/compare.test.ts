import { describe, expect, it } from 'vitest';
import { testTask } from '../tasks/test-task.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { configurationChanged, stageOf, warmMetrics } from './compare.ts';
import type { Outcome } from './outcomes.ts';

const record = (over: Partial<AlarmRecord> = {}): AlarmRecord =>
  ({
    uuid: 'u1',
    task_id: 42,
    outcome: 'compressed',
    processed_at: 1_000,
    history: {
      id: 1,
      uuid: 'u1',
      task_id: 42,
      batch: 1,
      metric: 'm',
      level: 1,
      ctn: {},
      notice_time: 0,
      created_at: 1_000,
    },
    why: { task_version: 3 },
    k: 1,
    ...over,
  }) as AlarmRecord;

describe('why the saved configuration decides otherwise', () => {
  it('blames the configuration only when it was saved after the alarm (a pause moves the version, not it)', () => {
    const paused = testTask({ version: 5, config_version: 3, config_saved_at: 900, updated_at: 2_000 });
    const saved = testTask({ version: 5, config_version: 4, config_saved_at: 1_500, updated_at: 1_500 });
    expect(configurationChanged(paused, record())).toBeUndefined();
    expect(configurationChanged(saved, record())).toBe(
      'the configuration was saved after this alarm (version 4, 1970-01-01T00:25:00Z); it was decided under version 3',
    );
  });

  it('falls back on the task version for a task saved before configuration versions were kept', () => {
    expect(configurationChanged(testTask({ version: 3 }), record())).toBeUndefined();
    expect(configurationChanged(testTask({ version: 4, updated_at: 1_200 }), record())).toContain(
      'the task changed after this alarm (version 4',
    );
  });

  it('marks a metric warm when its first replayed alarm was not its window’s or count’s first', () => {
    const warm = warmMetrics([
      record({
        uuid: 'a',
        k: 3,
        history: { ...record().history, metric: 'x' },
        window: { start: 600, end: 1_200 },
      }),
      record({ uuid: 'b', k: 1, history: { ...record().history, metric: 'y' }, upgrade_counts: [4] }),
      record({ uuid: 'c', k: 1, history: { ...record().history, metric: 'z' }, upgrade_counts: [1] }),
      record({ uuid: 'd', k: 2, history: { ...record().history, metric: 'z' } }),
    ]);
    expect([...warm.keys()]).toEqual(['x', 'y']);
    expect(warm.get('x')).toContain(
      'began before the replay window (at 1970-01-01T00:10:00Z; this alarm was at position 3 in it)',
    );
  });
});

describe('stageOf', () => {
  const base: Outcome = {
    result: 'notified',
    decision: 'compressed',
    level: 1,
    notify: 'now',
    upgrades: [],
    receivers: ['default'],
    workflow: false,
  };
  it('names the first stage, in pipeline order, that decided differently', () => {
    expect(stageOf(['result', 'decision'], base, { ...base, result: 'filtered', decision: 'rejected' })).toBe(
      'filter',
    );
    expect(stageOf(['level', 'receivers'], base, { ...base, level: 3, receivers: ['d0'] })).toBe('filter');
    expect(stageOf(['decision'], base, { ...base, decision: 'recovery' })).toBe('recovery');
    expect(stageOf(['result', 'notify'], base, { ...base, result: 'compressed', notify: 'none' })).toBe(
      'compress',
    );
    expect(stageOf(['upgrades'], base, { ...base, upgrades: ['0.5.3'] })).toBe('upgrade');
    expect(stageOf(['receivers'], base, { ...base, receivers: ['d1'] })).toBe('receivers');
    expect(stageOf(['workflow'], base, { ...base, workflow: true })).toBe('workflow');
  });
});
