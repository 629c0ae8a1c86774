import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { putDue, queryDue } from '../../shared/domain/due/repository.ts';
import { type DueHandler, runDueWork } from '../../shared/domain/due/runner.ts';
import { DUE_SHARDS } from '../../shared/db/keys.ts';

/** The due-work index and runner against DynamoDB Local (the scheduled function's engine). */
describe('due work', () => {
  it('runs each item due by now exactly once when two runners race', async () => {
    // Arrange: a kind private to this test, items due in the past and one in the future
    const kind = `test-${randomUUID()}`;
    const ran: string[] = [];
    const handlers: Record<string, DueHandler> = {
      [kind]: async (item) => {
        ran.push(item.ref);
        await new Promise((r) => setTimeout(r, 5));
        return undefined;
      },
    };
    const now = 2_000_000_000;
    for (let i = 0; i < 12; i++) await putDue({ kind, ref: `r${i}`, due_at: now - 10 + i, payload: {} });
    await putDue({ kind, ref: 'future', due_at: now + 3600, payload: {} });

    // Act
    await Promise.all([runDueWork(handlers, now), runDueWork(handlers, now)]);

    // Assert
    expect(ran.sort()).toEqual(Array.from({ length: 11 }, (_, i) => `r${i}`).sort());
    const left = (await Promise.all(Array.from({ length: DUE_SHARDS }, (_, s) => queryDue(s, now + 3600)))).flat();
    expect(left.filter((d) => d.kind === kind).map((d) => d.ref).sort()).toEqual(['future', 'r11']);
    await runDueWork(handlers, now + 3600);
  });

  it('puts failed work back a minute later and re-arms rescheduled work', async () => {
    const kind = `test-${randomUUID()}`;
    let calls = 0;
    const handlers: Record<string, DueHandler> = {
      [kind]: async (item) => {
        calls++;
        if (item.ref === 'boom') throw new Error('transient');
        return { reschedule: item.due_at + 300 };
      },
    };
    const now = 2_100_000_000;
    await putDue({ kind, ref: 'boom', due_at: now, payload: { a: 1 } });
    await putDue({ kind, ref: 'cycle', due_at: now, payload: { b: 2 } });

    const first = await runDueWork(handlers, now);

    expect(first).toEqual({ ran: 1, failed: 1 });
    const mine = (await Promise.all(Array.from({ length: DUE_SHARDS }, (_, s) => queryDue(s, now + 300))))
      .flat()
      .filter((d) => d.kind === kind);
    expect(mine.map((d) => [d.ref, d.due_at, d.attempts ?? 0]).sort()).toEqual([
      ['boom', now + 60, 1],
      ['cycle', now + 300, 0],
    ]);
    expect(calls).toBe(2);
    // The put-back items run again at their new time (and only then).
    const again: string[] = [];
    const second = await runDueWork({ [kind]: async (item) => void again.push(item.ref) }, now + 300);
    expect(again.sort()).toEqual(['boom', 'cycle']);
    expect(second).toEqual({ ran: 2, failed: 0 });
  });
});
