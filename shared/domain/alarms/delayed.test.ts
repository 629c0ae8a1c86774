import { describe, expect, it } from 'vitest';
import type { DueItem } from '../due/repository.ts';
import { FLUSH_KIND, flushCompressWindow, RECOVERY_DELAY_KIND, runRecoveryDelay } from './delayed.ts';
import { processAlarmBatch } from './pipeline.ts';
import { alarm, fakes, full, msg, testTask } from './test-pipeline.ts';

describe('due work', () => {
  it('compress-flush notifies the window opener once its window ended', async () => {
    const f = fakes(testTask({ compress: { ...full, strategy: 2, strategy_cycle: 5 } }));
    const [a, b] = [alarm({ n: 1 }), alarm({ n: 2 })];
    await processAlarmBatch([msg(a), msg(b)], f.deps);
    expect(f.events).toEqual([]);
    expect(f.dues.map((d) => [d.kind, d.due_at, d.payload.uuid])).toEqual([
      [FLUSH_KIND, 1_700_000_300, a.uuid],
    ]);
    expect(await flushCompressWindow(f.dues[0], 1_700_000_300, f.deps)).toBeUndefined();
    expect(f.events.map((e) => [e.body.type, e.eventId])).toEqual([['compressed', `42:${a.uuid}:ALARM`]]);
  });

  it('compress-flush holds while the task is paused', async () => {
    const f = fakes(testTask({ status: 2, paused_until: 1_700_000_900 }));
    const item: DueItem = { kind: FLUSH_KIND, ref: 'r', due_at: 0, payload: { task_id: 42, uuid: 'x' } };
    expect(await flushCompressWindow(item, 1_700_000_000, f.deps)).toEqual({ reschedule: 1_700_000_900 });
  });

  it('recovery-delay re-arms while alarms keep coming, then recovers the last alarm once', async () => {
    const task = testTask({ compress: full, recovery: { enable: true, mode: 2, delay_interval: 2 } });
    const f = fakes(task);
    const a = alarm({ n: 1 });
    await processAlarmBatch([msg(a)], f.deps);
    const due = f.dues.find((d) => d.kind === RECOVERY_DELAY_KIND) as DueItem;
    expect(due.due_at).toBe(1_700_000_120);
    f.advance(60);
    const b = alarm({ n: 2 });
    await processAlarmBatch([msg(b)], f.deps);
    expect(f.dues.filter((d) => d.kind === RECOVERY_DELAY_KIND)).toHaveLength(1);
    expect(await runRecoveryDelay(due, 1_700_000_120, f.deps)).toEqual({ reschedule: 1_700_000_180 });
    expect(await runRecoveryDelay(due, 1_700_000_180, f.deps)).toBeUndefined();
    expect(f.events.filter((e) => e.body.event === 'RECOVERY').map((e) => e.eventId)).toEqual([
      `42:${b.uuid}:RECOVERY`,
    ]);
    expect(f.finished).toHaveLength(1);
    expect([...f.states.values()][0].recovery_pending).toBe(false);
    // A stale duplicate of the item finds nothing pending.
    expect(await runRecoveryDelay(due, 1_700_000_200, f.deps)).toBeUndefined();
    expect(f.events.filter((e) => e.body.event === 'RECOVERY')).toHaveLength(1);
  });
});
