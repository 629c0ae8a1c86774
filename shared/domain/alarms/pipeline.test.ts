import { describe, expect, it } from 'vitest';
import { parseAlarmMessage, processAlarmBatch } from './pipeline.ts';
import { alarm, fakes, full, msg, testTask } from './test-pipeline.ts';
import { logged } from '../../testing/logs.ts';

describe('parseAlarmMessage', () => {
  it('accepts an AlarmMessage and refuses anything else', () => {
    const a = alarm({ x: 1 });
    expect(parseAlarmMessage(JSON.stringify(a))).toEqual(a);
    expect(parseAlarmMessage('{nope')).toBeUndefined();
    expect(parseAlarmMessage('null')).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, kind: 'webhook' }))).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, ctn: [1] }))).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, level: 4 }))).toBeUndefined();
    expect(parseAlarmMessage(JSON.stringify({ ...a, task_id: '42' }))).toBeUndefined();
  });
});

describe('processAlarmBatch', () => {
  it('stores, then notifies with ids derived from the uuid (compression off)', async () => {
    const f = fakes(testTask());
    const a = alarm({ host: 'h' });
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    const rec = f.records.get(`42#${a.uuid}`);
    expect(rec).toMatchObject({
      outcome: 'compress_disable',
      notify: 'now',
      history: { id: 1001, uuid: a.uuid },
    });
    expect(f.events).toEqual([
      {
        taskId: 42,
        eventId: `42:${a.uuid}:ALARM`,
        body: {
          event: 'ALARM',
          type: 'compress_disable',
          data: {
            task: { id: 42, name: 'orders' },
            history: expect.objectContaining({ id: 1001, uuid: a.uuid }),
          },
          extra: {},
        },
      },
    ]);
    expect(f.jobs.map((j) => [j.job_id, j.scene])).toEqual([
      [`42:${a.uuid}:not_compress:email`, 'not_compress'],
    ]);
  });

  it('a redelivered alarm keeps its first record and sends the same ids again, marked as a replay', async () => {
    const f = fakes(testTask({ compress: full }));
    const a = alarm({ host: 'h' });
    await processAlarmBatch([msg(a)], f.deps);
    await processAlarmBatch([msg(a)], f.deps);
    expect(f.records.size).toBe(1);
    const state = [...f.states.values()][0];
    expect(state.window?.k).toBe(1);
    expect(state.version).toBe(1);
    expect(f.events.map((e) => e.eventId)).toEqual([`42:${a.uuid}:ALARM`, `42:${a.uuid}:ALARM`]);
    // The deliverer sends the replay only if the first was not delivered since the record was written.
    const processedMs = [...f.records.values()][0].processed_at * 1000;
    expect(f.events.map((e) => e.replaySinceMs)).toEqual([undefined, processedMs - 1000]);
    expect(f.jobs.map((j) => j.replay)).toEqual([undefined, true]);
  });

  it('logs every processed alarm with its decision; the reasons of an unstored one travel in its entry', async () => {
    // Arrange: a whitelist on ctn.app (pay: kept at level 3), compression by ctn.host, one dispatch item.
    const f = fakes(
      testTask({
        filter: {
          enable: true,
          mode: 1,
          conditions: [{ rule: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay' }], level: 3 }],
        },
        compress: {
          ...full,
          method: 1,
          conditions: [{ rule: [{ field: 'ctn.host', operator: 'eq-self' }] }],
        },
        upgrade: { enable: true, strategies: [{ interval: 5, count: 2, level: 3, reuse_receiver: 1 }] },
      }),
    );
    const kept = alarm({ app: 'pay', host: 'h1' });
    const second = alarm({ app: 'pay', host: 'h1' });
    const dropped = alarm({ app: 'web', host: 'h1' });
    // Act
    expect(await processAlarmBatch([msg(kept), msg(second), msg(dropped)], f.deps)).toEqual([]);
    // Assert: the log has all three; the filtered one has no record, and its entry says why.
    const byUuid = new Map(f.logged.map((e) => [e.uuid, e]));
    expect(byUuid.get(dropped.uuid)).toMatchObject({
      decision: 'drop',
      stored: false,
      history_id: 0,
      level: 1,
    });
    expect(byUuid.get(dropped.uuid)?.why?.filter).toMatchObject({
      mode: 'whitelist',
      kept: false,
      conditions: 1,
      misses: [
        {
          index: 0,
          rules: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay', value: 'web', ok: false }],
        },
      ],
    });
    expect(f.records.has(`42#${dropped.uuid}`)).toBe(false);
    expect(byUuid.get(kept.uuid)).toMatchObject({
      decision: 'compressed',
      notify: 'now',
      k: 1,
      level: 3,
      stored: true,
    });
    expect(byUuid.get(kept.uuid)?.why).toBeUndefined();
    expect(byUuid.get(second.uuid)).toMatchObject({ notify: 'none', k: 2, upgrades: 1 });
    // The record keeps the reasons, the window and the upgrade counts.
    const rec = f.records.get(`42#${second.uuid}`);
    expect(rec?.why?.filter).toMatchObject({ kept: true, level_from: 1, level_to: 3, match: { index: 0 } });
    expect(rec?.why?.compress).toMatchObject({
      method: 'condition',
      strategy: 'cycle',
      match: { index: 0, rules: [{ field: 'ctn.host', operator: 'eq-self', value: 'h1', ok: true }] },
    });
    expect(rec?.window).toEqual({ start: 1_700_000_000, end: 1_700_000_060 });
    expect(rec?.upgrade_counts).toEqual([2]);
    expect(rec?.expires_at).toBe(1_700_000_000 + 90 * 86_400);
  });

  it('never retries a batch for its log: a log write that keeps failing costs history entries, not a resend', async () => {
    // Arrange: a task that stores nothing (a resend of its alarm would be a new notification)
    const f = fakes(testTask({ flag_save_db: 0 }));
    const a = alarm({ host: 'h' });
    f.failNextLog(3);
    // Act
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(a)], f.deps));
    // Assert: acknowledged and sent once; the log entry is lost (three attempts), said so and counted
    expect(failed).toEqual([]);
    expect(errors).toEqual([
      [
        'log entries lost (the alarms and their webhook first attempts were processed)',
        expect.objectContaining({ uuids: [a.uuid], webhookAttempts: 1 }),
      ],
    ]);
    expect(f.events.map((e) => e.eventId)).toEqual([`42:${a.uuid}:ALARM`]);
    expect(f.logged).toEqual([]);
    expect(f.counted.filter((c) => c.name === 'AlarmLogLost')).toEqual([
      { name: 'AlarmLogLost', dims: {}, value: 2 },
    ]);
  });

  it('counts what it accepted and decided through its deps, and logs at the deps clock', async () => {
    // Arrange
    const f = fakes(testTask({ compress: full }));
    const a = alarm({ host: 'h' });
    // Act
    await processAlarmBatch([msg(a)], f.deps);
    // Assert
    expect(f.counted).toEqual([
      { name: 'AlarmsAccepted', dims: {}, value: 1 },
      { name: 'PipelineOutcome', dims: { outcome: 'compressed' }, value: 1 },
    ]);
    expect(f.logTimes).toEqual([1_700_000_000_000]);
  });

  it('measures each processed alarm from its report (PipelineLagMs), a message without reported_ms by its second', async () => {
    // Arrange: the deps clock is 1_700_000_000 s; one report 1.5 s before it, one of an earlier version
    const f = fakes(testTask());
    const recent = { ...alarm({ host: 'a' }), reported_ms: 1_700_000_000_000 - 1_500 };
    const older = { ...alarm({ host: 'b' }), reported_at: 1_700_000_000 - 4 };
    // Act
    expect(await processAlarmBatch([msg(recent), msg(older)], f.deps)).toEqual([]);
    // Assert
    expect(f.measured.map((m) => [m.name, m.value]).sort()).toEqual([
      ['PipelineLagMs', 1_500],
      ['PipelineLagMs', 4_000],
    ]);
  });

  it('retries a failed log write: a passing failure loses nothing', async () => {
    const f = fakes(testTask());
    const a = alarm({ host: 'h' });
    f.failNextLog(2);
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    expect(f.logged.map((e) => e.uuid)).toEqual([a.uuid]);
  });

  it("keeps a compressed alarm's record as long as its window's flush and its metric's recovery may read it", async () => {
    // Arrange: retention 1 day, a delay window of 3 days, delay recovery after 2 days
    const f = fakes(
      testTask({
        alarm_retention_days: 1,
        compress: { ...full, strategy: 2, strategy_cycle: 3 * 1440 },
        recovery: { enable: true, mode: 2, delay_interval: 2 * 1440 },
      }),
    );
    const a = alarm({ host: 'h' });
    // Act
    await processAlarmBatch([msg(a)], f.deps);
    // Assert: the window end plus a paused task's longest hold and a day
    const rec = f.records.get(`42#${a.uuid}`);
    expect(rec?.expires_at).toBe(1_700_000_000 + 3 * 86_400 + 8 * 86_400);
  });

  it('a consumer that failed after the commit loses nothing: the retry re-runs the side effects only', async () => {
    const f = fakes(testTask({ compress: full }));
    const a = alarm({ host: 'h' });
    f.failNextPublish();
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(a)], f.deps));
    expect(failed).toEqual([`m-${a.uuid}`]);
    expect(errors.map(([m]) => m)).toEqual([
      'could not send or queue the side effects of a batch; it will be retried',
    ]);
    expect(f.events).toEqual([]);
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    expect(f.events.map((e) => e.body.type)).toEqual(['compressed']);
    expect([...f.states.values()][0].window?.k).toBe(1);
  });

  it.each([
    ['not compressed', {}],
    ['compressed', { compress: full }],
  ])("processes a uuid reused by another task as that task's own alarm (%s)", async (_name, over) => {
    // Arrange: task 42 recorded the uuid; later task 43 reports the same (client-chosen) uuid
    const f = fakes(testTask(over));
    const a = alarm({ secret_of_42: 'x' });
    await processAlarmBatch([msg(a)], f.deps);
    f.deps.getTask = async (id) =>
      testTask({
        ...over,
        id,
        name: 'other',
        receiver: { channels: { sms: [2], webhook: 'https://x.example/h' } },
      });
    // Act
    const failed = await processAlarmBatch([msg({ ...a, task_id: 43, ctn: { mine: 1 } })], f.deps);
    // Assert: task 43 gets its own record and its own event; task 42's record is intact
    expect(failed).toEqual([]);
    expect(f.records.get(`42#${a.uuid}`)?.history.ctn).toEqual({ secret_of_42: 'x' });
    expect(f.records.get(`43#${a.uuid}`)?.history.ctn).toEqual({ mine: 1 });
    const mine = f.events.filter((e) => e.taskId === 43);
    expect(mine).toHaveLength(1);
    expect(JSON.stringify(mine[0].body)).not.toContain('secret_of_42');
  });

  it('copies of one alarm in one batch are processed once and acknowledged together', async () => {
    const f = fakes(testTask({ compress: full }));
    const a = alarm({ host: 'h' });
    const copies = [msg(a), { ...msg(a), id: 'copy' }];
    expect(await processAlarmBatch(copies, f.deps)).toEqual([]);
    expect(f.records.size).toBe(1);
    expect(f.events).toHaveLength(1);
    const g = fakes(testTask());
    g.failNextPublish();
    const b = alarm({ host: 'h' });
    const [failed, errors] = await logged('error', () =>
      processAlarmBatch([msg(b), { ...msg(b), id: 'copy-b' }], g.deps),
    );
    expect(failed).toEqual([`m-${b.uuid}`, 'copy-b']);
    expect(errors.map(([m]) => m)).toEqual([
      'could not send or queue the side effects of a batch; it will be retried',
    ]);
  });

  it('retries a commit that lost a race, then succeeds', async () => {
    const f = fakes(testTask({ compress: full }), { conflicts: 3 });
    const a = alarm({ host: 'h' });
    expect(await processAlarmBatch([msg(a)], f.deps)).toEqual([]);
    expect(f.records.get(`42#${a.uuid}`)?.k).toBe(1);
  });

  it('reports the whole group when its commit keeps failing while the state never moves (not contention)', async () => {
    const f = fakes(testTask({ compress: full }), { conflicts: 100_000 });
    const [a, b] = [alarm({ n: 1 }), alarm({ n: 2 })];
    const [failed, errors] = await logged('error', () => processAlarmBatch([msg(a), msg(b)], f.deps));
    expect(failed.sort()).toEqual([`m-${a.uuid}`, `m-${b.uuid}`].sort());
    expect(errors).toEqual([
      [
        'alarm processing failed; will be retried',
        expect.objectContaining({ messageIds: [`m-${a.uuid}`, `m-${b.uuid}`] }),
      ],
    ]);
    expect(f.records.size).toBe(0);
    expect(f.handedBack).toEqual([]);
  });

  it('a batch of one metric advances one window in order; a duplicate in it is only replayed', async () => {
    const f = fakes(testTask({ compress: { ...full, strategy: 3, strategy_count: 2 } }));
    const first = alarm({ n: 0 });
    await processAlarmBatch([msg(first)], f.deps);
    const more = [alarm({ n: 1 }), alarm({ n: 2 }), alarm({ n: 3 })];
    expect(await processAlarmBatch([msg(first), ...more.map(msg)], f.deps)).toEqual([]);
    expect([first, ...more].map((a) => f.records.get(`42#${a.uuid}`)?.k)).toEqual([1, 2, 1, 2]);
    expect([first, ...more].map((a) => f.records.get(`42#${a.uuid}`)?.notify)).toEqual([
      'now',
      'now',
      'now',
      'now',
    ]);
    expect(f.records.size).toBe(4);
  });

  it('skips malformed messages (reported for the DLQ) and alarms of deleted tasks', async () => {
    const f = fakes(testTask());
    const [failed, errors] = await logged('error', () =>
      processAlarmBatch([msg(alarm({ x: 1 })), { id: 'bad', body: '{' }], f.deps),
    );
    expect(failed).toEqual(['bad']);
    // Its id only: a malformed message may hold anything
    expect(errors).toEqual([
      ['malformed alarm message; left for the dead-letter queue', { messageId: 'bad' }],
    ]);
    expect(f.events).toHaveLength(1);

    const gone = fakes(undefined);
    const lost = alarm({ x: 1 });
    const [acknowledged, warnings] = await logged('warn', () => processAlarmBatch([msg(lost)], gone.deps));
    expect(acknowledged).toEqual([]);
    expect(warnings).toEqual([['alarm of an unknown task dropped', { uuid: lost.uuid, taskId: 42 }]]);
    expect(gone.events).toEqual([]);
  });

  it.each([
    ['stopped', { status: 0 as const }],
    ['paused', { status: 2 as const, paused_until: 1_700_000_100 }],
  ])('processes an alarm accepted before its task was %s', async (_name, over) => {
    const f = fakes(testTask(over));
    expect(await processAlarmBatch([msg(alarm({ x: 1 }))], f.deps)).toEqual([]);
    expect(f.events).toHaveLength(1);
    expect(f.records.size).toBe(1);
  });
});
