import { describe, expect, it } from 'vitest';
import type { Task } from '../tasks/model.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { processAlarmBatch } from '../alarms/pipeline.ts';
import { alarm, fakes, msg, testTask } from '../alarms/test-pipeline.ts';
import { inRecordedOrder, runReplay } from './engine.ts';
import { differences, outcomeOfRecord } from './outcomes.ts';

/**
 * The replay engine against alarms the production pipeline recorded (over the unit tests' in-memory
 * adapters): the saved configuration replayed decides every alarm as it was recorded, and the
 * edited one decides as that configuration would have.
 */
const T0 = 1_700_000_000;
const directory = { groups: new Map(), users: new Map() };

/** Records `n` alarms on `hosts` hosts, `gap` seconds apart, under `task`; returns the records. */
async function record(task: Task, n: number, gap: number, hosts = 3): Promise<AlarmRecord[]> {
  const f = fakes(task);
  for (let i = 0; i < n; i++) {
    await processAlarmBatch([msg(alarm({ host: `h${i % hosts}` }, { notice_time: T0 + i * gap }))], f.deps);
    f.advance(gap);
  }
  return [...f.records.values()];
}

const compressing = (strategy: 1 | 2 | 3 | 4 | 5, over: Partial<Task> = {}) =>
  testTask({
    compress: {
      enable: true,
      method: 3,
      strategy,
      strategy_cycle: 10,
      strategy_count: 4,
      not_match: 1,
    },
    upgrade: {
      enable: true,
      strategies: [{ interval: 5, count: 3, level: 3, reuse_receiver: 1 }],
    },
    ...over,
  });

describe('runReplay', () => {
  for (const strategy of [1, 2, 3, 4, 5] as const) {
    it(`replaying the saved configuration reproduces every recorded decision (strategy ${strategy})`, async () => {
      // Arrange: 120 alarms of three metrics over an hour, windows of 10 minutes
      const task = compressing(strategy);
      const records = await record(task, 120, 30);
      // Act
      const runs = await runReplay({
        current: task,
        edited: task,
        records: inRecordedOrder(records),
        horizon: T0 + 3600,
        directory,
      });
      // Assert: every alarm decided as recorded, windows, positions and upgrades included
      const mismatches = records.filter(
        (r) => differences(outcomeOfRecord(r), runs.current_outcomes.get(r.uuid)!).length > 0,
      );
      expect(runs.current_outcomes.size).toBe(120);
      expect(mismatches).toEqual([]);
      expect(records.some((r) => r.upgrades.length > 0)).toBe(true);
    });
  }

  it('the edited configuration decides as that configuration would have, recorded live', async () => {
    // Arrange: recorded under cycle windows; the edit counts to 4 instead
    const saved = compressing(1);
    const edit = compressing(5);
    const records = await record(saved, 60, 20);
    const live = new Map((await record(edit, 60, 20)).map((r) => [r.history.notice_time, r]));
    // Act
    const runs = await runReplay({
      current: saved,
      edited: edit,
      records: inRecordedOrder(records),
      horizon: T0 + 1200,
      directory,
    });
    // Assert: the edited decisions are those the edited configuration took live
    for (const r of records) {
      const truth = outcomeOfRecord(live.get(r.history.notice_time) as AlarmRecord);
      const replayed = runs.edited_outcomes.get(r.uuid)!;
      // Batch ids are history ids, which differ between the two live runs.
      expect({ ...replayed, batch: undefined }).toEqual({ ...truth, batch: undefined });
    }
  });

  it('sends nothing: what the runs would send is collected, per alarm', async () => {
    // Arrange: ten alarms of one metric, 5 s apart: one window; the third reaches the upgrade's count
    const task = compressing(1);
    const records = inRecordedOrder(await record(task, 10, 5, 1));
    // Act
    const runs = await runReplay({
      current: task,
      edited: task,
      records,
      horizon: T0 + 100,
      directory,
    });
    // Assert: the first is notified (an e-mail to uid 1 and an event), the third upgrades; per alarm
    const [first, third] = [records[0].uuid, records[2].uuid];
    for (const world of [runs.recorded, runs.current, runs.edited]) {
      expect(world.collector.jobs.map((j) => [j.uuid, j.job.scene, j.job.channel, j.job.users])).toEqual([
        [first, 'compressed', 'email', [1]],
        [third, 'upgrade', 'email', [1]],
      ]);
      expect(world.collector.events.map((e) => [e.uuid, e.event])).toEqual([
        [first, 'ALARM'],
        [third, 'UPGRADE'],
      ]);
    }
  });

  it('orders alarms of one second as their metric took them, whichever container numbered them', async () => {
    // Arrange: two windows of 2 opened in one second by two consumers; the later-numbered went first
    const rec = (uuid: string, batch: number, k: number, id: number, counts?: number[]): AlarmRecord =>
      ({
        uuid,
        outcome: 'compressed',
        processed_at: T0,
        k,
        window: { start: T0, end: T0 + 600 },
        history: { id, batch, metric: 'm' },
        ...(counts ? { upgrade_counts: counts } : {}),
      }) as AlarmRecord;
    const withCounts = [
      rec('a', 500, 1, 500, [3]),
      rec('b', 500, 2, 501, [4]),
      rec('c', 90, 1, 90, [1]),
      rec('d', 90, 2, 91, [2]),
    ];
    const withoutCounts = [rec('a', 500, 1, 500), rec('c', 90, 1, 90), rec('d', 90, 2, 91)];
    // Act / Assert: the counts give the order; without them the full window goes first
    expect(inRecordedOrder(withCounts).map((r) => r.uuid)).toEqual(['c', 'd', 'a', 'b']);
    expect(inRecordedOrder(withoutCounts).map((r) => r.uuid)).toEqual(['c', 'd', 'a']);
  });
});
