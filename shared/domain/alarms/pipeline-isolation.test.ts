import { describe, expect, it } from 'vitest';
import type { Task } from '../tasks/model.ts';
import { logged } from '../../testing/logs.ts';
import { processAlarmBatch } from './pipeline.ts';
import { TRANSACTION_BYTES, transactionShare } from './process.ts';
import type { CommitResult, MetricCommit } from './repository.ts';
import { alarm, fakes, full, msg, testTask } from './test-pipeline.ts';

/**
 * One batch, several units: a unit's effects go out when it finishes, not when the slowest unit of
 * its batch does; a compressed group larger than a transaction commits in turns.
 */
describe('a batch of several units', () => {
  it("sends a finished unit's events while another unit still waits for its metric", async () => {
    // Arrange: task 7 stores without compression; task 42 compresses, and its commit is held
    const plain = testTask({ id: 7 });
    const compressing = testTask({ compress: full });
    const f = fakes(compressing);
    f.deps.getTask = async (id) => (id === 7 ? plain : compressing) as Task;
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const commit = f.deps.repo.commitMetricGroup;
    f.deps.repo.commitMetricGroup = async (c: MetricCommit): Promise<CommitResult> => {
      await held;
      return commit(c);
    };
    const fast = alarm({ host: 'a' }, { task_id: 7 });
    const slow = alarm({ host: 'b' });
    // Act
    const batch = processAlarmBatch([msg(fast), msg(slow)], f.deps);
    await new Promise((r) => setTimeout(r, 50));
    const sentBefore = f.events.map((e) => e.eventId);
    release();
    const failed = await batch;
    // Assert: the fast unit's event went out before the slow unit committed; then the slow one's
    expect(sentBefore).toEqual([`7:${fast.uuid}:ALARM`]);
    expect(failed).toEqual([]);
    expect(f.events.map((e) => e.eventId)).toEqual([`7:${fast.uuid}:ALARM`, `42:${slow.uuid}:ALARM`]);
    // ... and the batch's log is one write, with both alarms
    expect(f.logTimes).toHaveLength(1);
    expect(f.logged.map((e) => e.uuid).sort()).toEqual([fast.uuid, slow.uuid].sort());
  });

  it('retries the whole batch when a send fails, the sent units included (their effects replay)', async () => {
    const f = fakes(testTask());
    f.failNextPublish();
    const a = alarm({ host: 'x' });
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(a)], f.deps));
    expect(failed).toEqual([`m-${a.uuid}`]);
    expect(errors.map(([message]) => message)).toEqual([
      'could not send or queue the side effects of a batch; it will be retried',
    ]);
    expect(f.logged).toEqual([]);
  });
});

describe('a compressed group larger than one transaction', () => {
  it('commits in turns, each below the 4 MB transaction limit, its metric counting every alarm in order', async () => {
    // Arrange: 20 alarms of one metric with 600 KB of content each (12 MB in all)
    const f = fakes(testTask({ compress: { ...full, strategy: 3, strategy_count: 1 } }));
    const commits: number[] = [];
    const commit = f.deps.repo.commitMetricGroup;
    f.deps.repo.commitMetricGroup = async (c: MetricCommit) => {
      commits.push(c.records.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r)), 0));
      return commit(c);
    };
    const big = Array.from({ length: 20 }, (_, i) => alarm({ blob: 'x'.repeat(600_000), i }));
    // Act
    const failed = await processAlarmBatch(big.map(msg), f.deps);
    // Assert
    expect(failed).toEqual([]);
    expect(commits.length).toBeGreaterThan(3);
    for (const bytes of commits) expect(bytes).toBeLessThan(4_000_000);
    const seqs = big.map((a) => f.records.get(`42#${a.uuid}`)?.seq);
    expect(seqs).toEqual(big.map((_, i) => i + 1));
  });

  it('takes at least one alarm a turn, and every alarm that fits', () => {
    const small = Array.from({ length: 25 }, (_, i) => alarm({ i }));
    const huge = alarm({ blob: 'x'.repeat(TRANSACTION_BYTES) });
    expect(transactionShare(small)).toBe(25);
    expect(transactionShare([huge, ...small])).toBe(1);
    expect(transactionShare([...small.slice(0, 2), huge])).toBe(2);
  });
});
