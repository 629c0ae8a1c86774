import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { buryDue, leaseDue, putDue, queryDue, reviveDeadDue } from '../../shared/domain/due/repository.ts';
import { type DueHandler, LEASE_SECONDS, MAX_ATTEMPTS, runDueWork } from '../../shared/domain/due/runner.ts';
import { DUE_SHARDS, shardOf } from '../../shared/db/keys.ts';
import { logged } from '../../shared/testing/logs.ts';

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
    const left = (
      await Promise.all(Array.from({ length: DUE_SHARDS }, (_, s) => queryDue(s, now + 3600)))
    ).flat();
    expect(
      left
        .filter((d) => d.kind === kind)
        .map((d) => d.ref)
        .sort(),
    ).toEqual(['future', 'r11']);
    await runDueWork(handlers, now + 3600);
  });

  it('retries failed work a minute later and re-arms rescheduled work', async () => {
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

    const [first, errors] = await logged('error', () => runDueWork(handlers, now));

    expect(first).toEqual({ ran: 1, failed: 1 });
    expect(errors).toEqual([
      [
        'due work failed',
        expect.objectContaining({ kind, ref: 'boom', attempts: 1, error: new Error('transient') }),
      ],
    ]);
    const mine = (await Promise.all(Array.from({ length: DUE_SHARDS }, (_, s) => queryDue(s, now + 300))))
      .flat()
      .filter((d) => d.kind === kind);
    expect(mine.map((d) => [d.ref, d.due_at, d.attempts ?? 0, d.leased_until]).sort()).toEqual([
      ['boom', now, 1, now + 60],
      ['cycle', now + 300, 0, undefined],
    ]);
    expect(calls).toBe(2);
    // Not before its retry time.
    expect(await runDueWork(handlers, now + 59)).toEqual({ ran: 0, failed: 0 });
    // The put-back items run again at their new time (and only then).
    const again: string[] = [];
    const second = await runDueWork({ [kind]: async (item) => void again.push(item.ref) }, now + 300);
    expect(again.sort()).toEqual(['boom', 'cycle']);
    expect(second).toEqual({ ran: 2, failed: 0 });
  });

  it('takes over work whose runner died mid-way once the lease expires', async () => {
    // Arrange: a runner leased the item and never finished (a crash or a timeout)
    const kind = `test-${randomUUID()}`;
    const now = 2_200_000_000;
    const item = { kind, ref: 'crashed', due_at: now, payload: {} };
    await putDue(item);
    expect(await leaseDue(item, now, LEASE_SECONDS)).toEqual(expect.any(String));
    const ran: number[] = [];
    const handlers: Record<string, DueHandler> = { [kind]: async (_i, at) => void ran.push(at) };

    // Act
    const during = await runDueWork(handlers, now + LEASE_SECONDS - 1);
    const after = await runDueWork(handlers, now + LEASE_SECONDS);

    // Assert
    expect(during.ran).toBe(0);
    expect(after.ran).toBe(1);
    expect(ran).toEqual([now + LEASE_SECONDS]);
  });

  it('keeps work that keeps failing for an operator after the last attempt', async () => {
    const kind = `test-${randomUUID()}`;
    const now = 2_300_000_000;
    await putDue({ kind, ref: 'doomed', due_at: now, payload: { x: 1 } });
    const handlers: Record<string, DueHandler> = {
      [kind]: async () => {
        throw new Error('provider down');
      },
    };

    const [, errors] = await logged('error', async () => {
      for (let i = 0; i < MAX_ATTEMPTS; i++) await runDueWork(handlers, now + i * 60);
    });

    // Each failed run is logged, with its attempt
    expect(errors.map(([message, a]) => [message, a.ref, a.attempts])).toEqual(
      Array.from({ length: MAX_ATTEMPTS }, (_, i) => ['due work failed', 'doomed', i + 1]),
    );
    const left = (
      await Promise.all(Array.from({ length: DUE_SHARDS }, (_, s) => queryDue(s, now + 3600)))
    ).flat();
    expect(left.filter((d) => d.kind === kind)).toEqual([]);
    const dead = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.dueDead(kind, now, 'doomed') }),
    );
    expect(dead.Item).toMatchObject({
      kind,
      ref: 'doomed',
      attempts: MAX_ATTEMPTS,
      error: 'provider down',
      payload: { x: 1 },
    });
  });

  it('revives dead work once, however often the revive is asked for (one transaction)', async () => {
    // Arrange: a dead item of a kind no handler serves here
    const ref = `revive-${randomUUID()}`;
    const kind = 'test-revive';
    const dead = { kind, ref, due_at: 1_000, payload: { n: 1 }, attempts: 3 };
    await buryDue(dead, 'no-lease', 'boom', 2_000);
    // Act: two revives at once, then a third
    const now = 5_000_000_000;
    const results = await Promise.all([reviveDeadDue(dead, now), reviveDeadDue(dead, now)]);
    const again = await reviveDeadDue(dead, now + 1);
    // Assert: exactly one revived; the due item exists once, the dead one is gone
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(again).toBe(false);
    const get = (key: Record<string, string>) =>
      db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
    expect((await get(keys.dueDead(kind, 1_000, ref))).Item).toBeUndefined();
    const due = (await get(keys.due(shardOf(`${kind}#${ref}`, DUE_SHARDS), now, kind, ref))).Item;
    expect(due).toMatchObject({ ref, payload: { n: 1 }, attempts: 0 });
  });
});
