import { describe, expect, it } from 'vitest';
import type { User } from '../directory/model.ts';
import type { Task } from '../tasks/model.ts';
import type { AlarmLogEntry } from '../alarms/log.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { processAlarmBatch } from '../alarms/pipeline.ts';
import { alarm, fakes, msg, testTask } from '../alarms/test-pipeline.ts';
import type { ReplayItem } from './repository.ts';
import type { ReplayDone } from './responses.ts';
import {
  INLINE_MAX_ALARMS,
  type ReplayDeps,
  replayDeps,
  runQueuedReplayMessages,
  showReplay,
  startReplay,
} from './service.ts';

/**
 * The replay use cases over alarms the production pipeline recorded (on the unit tests' in-memory
 * adapters), with the replay's storage and queue in memory: what the answer says, when it answers at
 * once and when it queues, and what it writes (its result item, nothing else).
 */
const T0 = 1_700_000_000;

const compressing = (over: Partial<Task> = {}) =>
  testTask({
    compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 10, strategy_count: 1, not_match: 1 },
    ...over,
  });

/** `n` alarms `gap` seconds apart recorded under `task`: the alarm log entries and records. */
async function history(task: Task, n: number, gap: number) {
  const f = fakes(task);
  for (let i = 0; i < n; i++) {
    await processAlarmBatch([msg(alarm({ host: `h${i % 4}`, i }, { notice_time: T0 + i * gap }))], f.deps);
    f.advance(gap);
  }
  return { entries: f.logged, records: [...f.records.values()], end: T0 + n * gap };
}

function deps(task: Task, h: { entries: AlarmLogEntry[]; records: AlarmRecord[]; end: number }) {
  const items = new Map<string, ReplayItem>();
  const queued: string[] = [];
  const writes: string[] = [];
  let id = 0;
  const users: User[] = [{ uid: 1, username: 'Ann' } as User];
  const d: ReplayDeps = {
    ...replayDeps,
    now: () => h.end,
    newId: () => `r${++id}`,
    taskForUser: async (_uid, taskId) => {
      if (taskId !== task.id) throw new Error('unknown task');
      return task;
    },
    getTask: async () => task,
    source: {
      // Newest first, as the log reads, paged by `limit`.
      queryAlarmLog: async (_taskId, window, _filter, limit, cursor) => {
        const all = h.entries
          .filter((e) => e.created_at >= window.from && e.created_at <= window.to)
          .sort((a, b) => b.created_at - a.created_at || b.history_id - a.history_id);
        const start = cursor?.taken ?? 0;
        const entries = all.slice(start, start + limit);
        const next = start + limit < all.length ? { day: 0, sk: '', taken: start + limit } : undefined;
        return { entries, next, scanned: 1 };
      },
      getAlarmRecords: async (_taskId, uuids) => h.records.filter((r) => uuids.includes(r.uuid)),
    },
    getAlarmGroups: async () => [],
    getUsers: async (uids) => users.filter((u) => uids.includes(u.uid)),
    getTemplate: async () => undefined,
    putReplay: async (item) => {
      writes.push(`${item.replay_id}:${item.status}`);
      items.set(item.replay_id, structuredClone(item));
    },
    getReplay: async (rid) => structuredClone(items.get(rid)),
    enqueue: async (rid) => {
      queued.push(rid);
    },
    env: () => ({ env: 'test', timeZone: 'UTC' }),
  };
  return { deps: d, items, queued, writes };
}

describe('startReplay', () => {
  it('replays a small window at once: the saved configuration reproduces it, the edit is summed up', async () => {
    // Arrange: 40 alarms of 4 hosts (one metric: full compression), a window every 10 minutes
    const task = compressing();
    const h = await history(task, 40, 30);
    const { deps: d, writes, queued } = deps(task, h);
    // Act: what 30-minute windows would have done
    const out = (await startReplay(
      {
        uid: 1,
        task_id: 42,
        last: 40,
        config: { filter_fields: ['compress.strategy_cycle'], compress: { strategy_cycle: 30 } },
      },
      d,
    )) as ReplayDone;
    // Assert: done at once, every recorded decision reproduced
    expect(out.status).toBe('done');
    expect(queued).toEqual([]);
    expect(writes).toEqual(['r1:done']);
    expect(out.alarms).toEqual({
      in_window: 40,
      replayable: 40,
      skipped: 0,
      skipped_not_stored: 0,
      skipped_expired: 0,
    });
    expect(out.fidelity).toMatchObject({ share: 1, matched: 40, compared: 40, mismatches_total: 0 });
    // 20 minutes of alarms: two 10-minute windows recorded, one 30-minute window edited.
    expect(out.summary.recorded).toMatchObject({
      alarms: 40,
      notified: 2,
      compressed: 38,
      messages: { email: 2 },
    });
    expect(out.summary.current).toMatchObject({ notified: 2, compressed: 38, messages: { email: 2 } });
    expect(out.summary.edited).toMatchObject({ notified: 1, compressed: 39, messages: { email: 1 } });
    expect(out.people).toEqual([{ uid: 1, username: 'Ann', before: { email: 2 }, after: { email: 1 } }]);
    // The second window's first alarm is now compressed away: the compression stage decided it (the
    // others only moved within their windows, which changes nothing anyone sees).
    expect(out.changes_total).toBe(1);
    expect(out.changes[0]).toMatchObject({
      stage: 'compress',
      fields: ['result', 'notify', 'receivers'],
      recorded: { result: 'notified', k: 1, receivers: ['default'] },
      edited: { result: 'compressed', k: 21, receivers: [] },
    });
    expect(out.changes[0].text).toContain('full compression, cycle strategy');
    expect(out.changes[0].text).toContain('window 30 min');
    expect(out.samples).toEqual([]);
  });

  it('says why the saved configuration decides otherwise: a window that began before the replay window', async () => {
    // Arrange: the last 25 of 40 alarms: the window they start in opened with the 21st alarm
    const task = compressing();
    const h = await history(task, 40, 30);
    const { deps: d } = deps(task, h);
    // Act
    const out = (await startReplay({ uid: 1, task_id: 42, last: 25 }, d)) as ReplayDone;
    // Assert: the first five replayed alarms of that window differ, and say why
    expect(out.fidelity.mismatches_total).toBeGreaterThan(0);
    expect(out.fidelity.mismatches[0].reasons.map((r) => r.reason)).toEqual(['warm-up']);
    expect(out.fidelity.mismatches[0].reasons[0].text).toContain('began before the replay window');
  });

  it('queues a window of more alarms than it answers at once, and the consumer finishes it', async () => {
    // Arrange
    const task = compressing();
    const h = await history(task, INLINE_MAX_ALARMS + 1, 1);
    const { deps: d, queued, writes } = deps(task, h);
    // Act
    const started = await startReplay({ uid: 1, task_id: 42, last: INLINE_MAX_ALARMS + 1 }, d);
    const running = await showReplay({ uid: 1, replay_id: 'r1' }, d);
    const retry = await runQueuedReplayMessages(
      queued.map((rid) => ({
        id: 'm1',
        body: JSON.stringify({ kind: 'replay', replay_id: rid }),
        receiveCount: 1,
      })),
      d,
    );
    const done = (await showReplay({ uid: 1, replay_id: 'r1' }, d)) as ReplayDone;
    // Assert
    expect(started).toEqual({ replay_id: 'r1', status: 'running', task_id: 42, created_at: h.end });
    expect(running.status).toBe('running');
    expect(retry).toEqual([]);
    expect(writes).toEqual(['r1:running', 'r1:done']);
    expect(done).toMatchObject({ status: 'done', alarms: { in_window: 1001, replayable: 1001 } });
    expect(done.fidelity.share).toBe(1);
  });

  it('refuses a configuration the save would refuse, naming the field, and writes nothing', async () => {
    const task = compressing();
    const h = await history(task, 3, 30);
    const { deps: d, writes } = deps(task, h);
    await expect(
      startReplay(
        { uid: 1, task_id: 42, config: { filter_fields: ['compress.strategy'], compress: { strategy: 9 } } },
        d,
      ),
    ).rejects.toMatchObject({
      status: 422,
      errors: [expect.objectContaining({ field: expect.stringMatching(/^config\.compress/) })],
    });
    expect(writes).toEqual([]);
  });
});
