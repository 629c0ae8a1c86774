import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { queryAlarmLog } from '../../shared/domain/alarms/log.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import type { ReplayDone } from '../../shared/domain/replay/responses.ts';
import { api, baseUrl } from '../support/client.ts';
import { StackClient } from '../support/replay.ts';
import { OTHER_APP } from '../support/seed.ts';
import { uniqueTaskName } from '../support/tasks.ts';

/**
 * `POST|GET /alarmtask/replay` and the guarded save on the shared test stack (API guide §13.7): who may
 * replay, what a small window's answer holds (skipped + replayable = the window, the changes and a
 * sample message of the edit, the scenario's pass/fail list), and the save that must match a replay.
 * The large windows, the queue and the fidelity over 10,000 alarms: replay-fidelity.test.ts.
 */
const client = new StackClient(baseUrl());
/** Read-only on the task (a `ro` permission); uid 3 has none. */
const READER = 2;
const STRANGER = 3;

/** Whitelist: warnings and above kept, notices dropped (not stored); one hour-long window; template #1. */
const config = {
  receiver: { channels: { email: [1] } },
  permission: { rw: [], ro: [READER] },
  filter: {
    enable: true,
    mode: 1,
    not_match: 0,
    conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '1' }], level: 9 }],
  },
  compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 60, not_match: 1 },
  template: { template_id: 1 },
};

/** The count strategy: the 6th alarm of a window notified (only it), instead of the first. */
const EDIT = {
  filter_fields: ['compress.strategy', 'compress.strategy_count'],
  compress: { strategy: 5, strategy_count: 6 },
};

let task: { id: number; token: string; secret: string };
/** A replay of another task (a save must not take it). */
let answerOfOtherTask = '';

/** Reports `n` alarms (levels 0..3 in turn) and waits until the task's log has them all. */
async function history(t: { id: number; token: string }, n: number): Promise<void> {
  const since = (await client.now()) - 5;
  await client.report(
    t,
    Array.from({ length: n }, (_, i) => ({ ctn: { host: 'db-1', i }, level: i % 4 })),
  );
  for (let tries = 0; ; tries++) {
    const page = await queryAlarmLog(t.id, { from: since, to: (await client.now()) + 5 }, {}, n + 1);
    if (page.entries.length >= n) return;
    if (tries > 150) throw new Error('alarms not processed in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  task = await client.createTask({ name: uniqueTaskName('replay'), ...config });
  await history(task, 24);
  const other = await client.createTask({ name: uniqueTaskName('replay-other'), ...config });
  answerOfOtherTask = (await client.replay({ task_id: other.id, last: 1 })).replay_id;
}, 60_000);

describe('POST /alarmtask/replay', () => {
  let answer: ReplayDone;

  it('answers a small window at once to a reader of the task: skipped + replayable = the window', async () => {
    // Arrange: the record of the window's last stored alarm is gone (as an expired one would be)
    const now = await client.now();
    const log = await queryAlarmLog(task.id, { from: now - 3_600, to: now + 5 }, {}, 30);
    const last = log.entries.find((e) => e.stored && e.k === 18);
    expect(last).toBeDefined();
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.alarm(task.id, last!.uuid) }));
    // Act
    const res = await api.post<ReplayDone>('/alarmtask/replay', {
      uid: READER,
      task_id: task.id,
      last: 24,
      config: EDIT,
    });
    answer = res.data;
    // Assert: 24 in the window: 6 notices dropped (not stored), 1 expired, 17 replayed as recorded
    expect([res.status, res.code, answer.status]).toEqual([200, 0, 'done']);
    expect(answer.alarms).toEqual({
      in_window: 24,
      replayable: 17,
      skipped: 7,
      skipped_not_stored: 6,
      skipped_expired: 1,
    });
    expect(answer.fidelity).toMatchObject({ share: 1, matched: 17, compared: 17 });
    expect(answer.notes[0]).toBe(
      '7 alarm(s) of the window could not be replayed: 6 whose content was not stored (the task stored nothing, or the filter dropped them), 1 whose record has expired',
    );
    // One window: the first alarm notified as recorded; the edit notifies the 6th instead
    expect(answer.summary.recorded).toMatchObject({ notified: 1, compressed: 16, messages: { email: 1 } });
    expect(answer.summary.edited).toMatchObject({ notified: 1, compressed: 16, messages: { email: 1 } });
    expect(answer.changes_total).toBe(2);
    expect(answer.changes.map((c) => [c.recorded.k, c.recorded.result, c.edited.result, c.stage])).toEqual([
      [1, 'notified', 'compressed', 'compress'],
      [6, 'compressed', 'notified', 'compress'],
    ]);
    expect(answer.changes[1].text).toContain('count strategy (only the 6th alarm of a window is notified');
    // The message the edit would send, rendered with the task's predefined template
    expect(answer.samples).toEqual([
      {
        scene: 'compressed',
        channel: 'email',
        uuid: answer.changes[1].uuid,
        message: expect.objectContaining({
          text: expect.stringMatching(/^replay-[0-9a-f-]+: \{"host":"db-1","i":\d+\}$/),
        }),
      },
    ]);
    expect(answer.people).toEqual([
      { uid: 1, username: 'Ann Lee', before: { email: 1 }, after: { email: 1 } },
    ]);
  });

  it('is read back by id by whoever may read the task', async () => {
    const mine = await api.get<ReplayDone>('/alarmtask/replay', {
      query: { uid: READER, replay_id: answer.replay_id },
    });
    const theirs = await api.get('/alarmtask/replay', {
      query: { uid: STRANGER, replay_id: answer.replay_id },
    });
    const none = await api.get('/alarmtask/replay', { query: { uid: READER, replay_id: 'no-such-replay' } });
    expect(mine.data).toEqual(answer);
    expect([theirs.status, theirs.msg]).toEqual([
      403,
      `user [${STRANGER}] has no permission on task [${task.id}]`,
    ]);
    expect([none.status, none.msg]).toEqual([404, 'replay [no-such-replay] not found']);
  });

  it('refuses a user without permission on the task and an app without the grant read', async () => {
    const stranger = await api.post('/alarmtask/replay', { uid: STRANGER, task_id: task.id });
    const app = await api.post('/alarmtask/replay', { uid: READER, task_id: task.id }, { app: OTHER_APP });
    expect([stranger.status, stranger.msg]).toEqual([
      403,
      `user [${STRANGER}] has no permission on task [${task.id}]`,
    ]);
    expect(app.status).toBe(403);
    expect(app.msg).toContain('lacks the grant [read]');
  });

  it('refuses a bad request naming the field, and writes nothing', async () => {
    const cases: [Record<string, unknown>, number, string][] = [
      [{ last: 10, from: 1, to: 2 }, 422, 'last cannot be given with from/to'],
      [{ from: 1, to: 1 + 32 * 86_400 }, 422, 'from the window may span at most 31 days'],
      [{ last: 5_001 }, 422, 'last must be at most 5000'],
      [
        { config: { filter_fields: ['compress.strategy'], compress: { strategy: 7 } } },
        422,
        'config.compress.strategy',
      ],
      [{ config: { filter_fields: ['nope'] } }, 422, 'config.nope is not an updatable field'],
      [{ expect: [{ alarm: 'ghost' }] }, 422, 'expect.0.alarm names no scenario alarm [ghost]'],
    ];
    for (const [body, status, msg] of cases) {
      const res = await api.post('/alarmtask/replay', { uid: READER, task_id: task.id, ...body });
      expect([res.status, res.msg.startsWith(msg)], JSON.stringify(body)).toEqual([status, true]);
    }
  });

  it('checks a scenario: each expectation passes or fails, in words', async () => {
    // Act: an urgent alarm (kept, notified to 1) and a notice (dropped), after an empty window (what
    // the task recorded before, in whatever order the queue delivered it, plays no part)
    const res = await client.replay({
      task_id: task.id,
      from: 1,
      to: 2,
      scenario: [
        { name: 'urgent', ctn: { host: 'new-host' }, level: 3 },
        { name: 'quiet', ctn: { host: 'new-host' }, level: 0 },
      ],
      expect: [
        { alarm: 'urgent', outcome: 'notified', receivers: { include: [1] } },
        { alarm: 'quiet', outcome: 'filtered' },
        { alarm: 'urgent', receivers: { exclude: [1] }, channel: 'email' },
        { alarm: 'quiet', outcome: 'notified', receivers: { include: [2] } },
      ],
    });
    // Assert
    expect(res.scenario.map((s) => [s.name, s.outcome.result, s.people])).toEqual([
      ['urgent', 'notified', [1]],
      ['quiet', 'filtered', []],
    ]);
    expect(res.assertions).toEqual([
      { alarm: 'urgent', pass: true, failures: [] },
      { alarm: 'quiet', pass: true, failures: [] },
      { alarm: 'urgent', pass: false, failures: ['notified on email, expected not to be: 1'] },
      {
        alarm: 'quiet',
        pass: false,
        failures: ['outcome: expected notified, got filtered', 'not notified: 2'],
      },
    ]);
    expect(res.passed).toBe(false);
  });
});

describe('the guarded save (update and updatefields with replay_id)', () => {
  it('saves only the configuration replayed, over the task the replay read: 409 and nothing written otherwise', async () => {
    // Arrange: a task of its own, and a replay of the edit
    const t = await client.createTask({ name: uniqueTaskName('replay-save'), ...config });
    await history(t, 4);
    const replayed = await client.replay({ task_id: t.id, last: 4, config: EDIT });
    const before = await getTask(t.id, true);
    // Act / Assert: another configuration under the replay's id: 409, nothing written
    const other = await client.taskCall('PUT', '/alarmtask/updatefields', t, {
      filter_fields: ['compress.strategy_count'],
      compress: { strategy_count: 7 },
      replay_id: replayed.replay_id,
    });
    expect([other.status, other.msg]).toEqual([
      409,
      `the configuration differs from the one replay [${replayed.replay_id}] replayed`,
    ]);
    expect((await getTask(t.id, true))?.version).toBe(before?.version);
    // ...an unknown replay, or another task's: 404
    const unknown = await client.taskCall('PUT', '/alarmtask/updatefields', t, {
      ...EDIT,
      replay_id: 'nope',
    });
    const foreign = await client.taskCall('PUT', '/alarmtask/updatefields', t, {
      ...EDIT,
      replay_id: answerOfOtherTask,
    });
    expect([unknown.status, foreign.status]).toEqual([404, 404]);
    // The configuration replayed: saved
    const saved = await client.taskCall('PUT', '/alarmtask/updatefields', t, {
      ...EDIT,
      replay_id: replayed.replay_id,
    });
    expect([saved.status, saved.code]).toEqual([200, 0]);
    const after = await getTask(t.id, true);
    expect(after).toMatchObject({
      compress: { strategy: 5, strategy_count: 6 },
      config_version: (before?.version ?? 0) + 1,
    });
    // Saved again with the same replay: the task changed since it (its own save): 409
    const twice = await client.taskCall('PUT', '/alarmtask/updatefields', t, {
      ...EDIT,
      replay_id: replayed.replay_id,
    });
    expect([twice.status, twice.msg]).toEqual([
      409,
      `task [${t.id}] changed since replay [${replayed.replay_id}] (version ${before?.version} then, ${after?.version} now): replay again`,
    ]);
  });

  it('a whole configuration (update) replayed and saved; a pause since the replay: 409', async () => {
    // Arrange: the whole configuration with 30-minute windows, replayed
    const t = await client.createTask({ name: uniqueTaskName('replay-update'), ...config });
    const whole = {
      name: (await getTask(t.id, true))?.name,
      department_id: 1,
      flag_save_db: 1,
      ...config,
      compress: { ...config.compress, strategy_cycle: 30 },
    };
    const first = await client.replay({ task_id: t.id, last: 10, config: whole });
    const second = await client.replay({ task_id: t.id, last: 10, config: whole });
    // Act: saved with the first replay; the second was of the task before that save
    const saved = await client.taskCall('PUT', '/alarmtask/update', t, {
      ...whole,
      replay_id: first.replay_id,
    });
    const late = await client.taskCall('PUT', '/alarmtask/update', t, {
      ...whole,
      replay_id: second.replay_id,
    });
    // Assert
    expect([saved.status, saved.code]).toEqual([200, 0]);
    expect((await getTask(t.id, true))?.compress.strategy_cycle).toBe(30);
    expect(late.status).toBe(409);
    expect(late.msg).toContain('changed since replay');
  });
});
