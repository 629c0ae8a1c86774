import { describe, expect, it } from 'vitest';
import { testTask as baseTask } from '../tasks/test-task.ts';
import { computeMetric } from './compress.ts';
import { processAlarmBatch } from './pipeline.ts';
import { alarm, fakes, full, msg, testTask } from './test-pipeline.ts';
import { logged } from '../../testing/logs.ts';

/** The side effects of a batch's alarms (effects.ts), through the batch that runs them. */
describe('processAlarmBatch: side effects', () => {
  it('runs the stages in order: upgrade, workflow, notify', async () => {
    const f = fakes(
      testTask({
        compress: full,
        workflow: { enable: true },
        upgrade: {
          enable: true,
          strategies: [
            { interval: 5, count: 1, level: 3, reuse_receiver: 0, receiver: { channels: { sms: [4] } } },
          ],
        },
      }),
    );
    const a = alarm({ x: 1 });
    await processAlarmBatch([msg(a)], f.deps);
    // The workflow is created inline; the batch's events and jobs are queued after, in stage order.
    expect(f.log).toEqual([
      `workflow ${a.uuid}`,
      `event 42:${a.uuid}:UPGRADE:0.5.1`,
      `event 42:${a.uuid}:ALARM`,
      `job 42:${a.uuid}:upgrade:0.5.1:sms`,
      `job 42:${a.uuid}:compressed:email`,
    ]);
    const upgradeJob = f.jobs.find((j) => j.scene === 'upgrade');
    expect(upgradeJob?.context.context).toEqual({
      rule: { interval: 5, count: 1, level: 3, reuse_receiver: 0 },
      zcount: 1,
    });
  });

  it('queues no webhook events for a task without a webhook URL (its jobs still go)', async () => {
    const f = fakes(baseTask());
    const a = alarm({ x: 1 });
    const failed = await processAlarmBatch([msg(a)], f.deps);
    expect(failed).toEqual([]);
    expect(f.events).toEqual([]);
    expect(f.jobs.map((j) => j.job_id)).toEqual([
      `42:${a.uuid}:compress_disable:email`.replace('compress_disable', 'not_compress'),
    ]);
  });

  it('queues the effects of a whole batch together, in parallel batches, after every alarm is recorded', async () => {
    const f = fakes(testTask());
    const batch = Array.from({ length: 10 }, (_, i) => alarm({ i }));
    let recordsAtFlush = -1;
    const send = f.deps.sendEffects;
    f.deps.sendEffects = async (m, delivered) => {
      recordsAtFlush = f.records.size;
      return send(m, delivered);
    };
    await processAlarmBatch(batch.map(msg), f.deps);
    expect(recordsAtFlush).toBe(10);
    expect(f.events).toHaveLength(10);
    // The ten records were stored in one request.
    expect(f.puts).toEqual([10]);
  });

  it('writes the alarm log and the delivery log of the first attempts in one write, after the effects', async () => {
    const f = fakes(testTask());
    const batch = [alarm({ i: 1 }), alarm({ i: 2 })];
    const order: string[] = [];
    const { sendEffects, logAlarms } = f.deps;
    f.deps.sendEffects = async (m, delivered) => {
      order.push('effects');
      return sendEffects(m, delivered);
    };
    f.deps.logAlarms = async (entries, deliveries) => {
      order.push(`log ${entries.length} alarms, ${deliveries?.length} deliveries`);
      return logAlarms(entries, deliveries);
    };
    await processAlarmBatch(batch.map(msg), f.deps);
    expect(order).toEqual(['effects', 'log 2 alarms, 2 deliveries']);
    expect(f.loggedDeliveries.map((a) => a.event_id)).toEqual(f.events.map((e) => e.eventId));
    expect(f.logged.map((e) => e.uuid).sort()).toEqual(batch.map((a) => a.uuid).sort());
  });

  it('retries a failed log write with the same time (the same item keys: overwritten, not copied)', async () => {
    const f = fakes(testTask());
    f.failNextLog(2);
    await processAlarmBatch([msg(alarm({ i: 1 }))], f.deps);
    expect(f.logged).toHaveLength(1);
    expect(f.logTimes).toHaveLength(3);
    expect(new Set(f.logTimes).size).toBe(1);
    expect(f.logTimes[0]).toEqual(expect.any(Number));
  });

  it('still logs the first attempts it made when the effects fail, and retries the batch without its alarm log', async () => {
    // Arrange: the events go out, then the notification jobs cannot be queued
    const f = fakes(testTask());
    const batch = [alarm({ i: 1 }), alarm({ i: 2 })];
    const { sendEffects } = f.deps;
    f.deps.sendEffects = async (m, delivered) => {
      await sendEffects({ ...m, notify: [] }, delivered);
      throw new Error('notify queue down');
    };
    // Act
    const [failed, errors] = await logged('error', () => processAlarmBatch(batch.map(msg), f.deps));
    // Assert
    expect(failed).toEqual(batch.map((a) => `m-${a.uuid}`));
    expect(errors.map(([m, x]) => [m, (x.error as Error).message])).toEqual([
      ['could not send or queue the side effects of a batch; it will be retried', 'notify queue down'],
    ]);
    expect(f.loggedDeliveries.map((a) => a.event_id)).toEqual(f.events.map((e) => e.eventId));
    expect(f.loggedDeliveries).toHaveLength(2);
    expect(f.logged).toEqual([]);
  });

  it('flag_save_db 0: ALARM not_save_db with msg, nothing stored', async () => {
    const f = fakes(testTask({ flag_save_db: 0, compress: full }));
    const a = alarm({ x: 1 }, { level: 2 });
    await processAlarmBatch([msg(a)], f.deps);
    expect(f.records.size).toBe(0);
    expect(f.events[0].body).toEqual({
      event: 'ALARM',
      type: 'not_save_db',
      data: {
        task: { id: 42, name: 'orders' },
        msg: { uuid: a.uuid, level: 2, leve: 2, ctn: { x: 1 }, notice_time: 1_700_000_000 },
      },
      extra: {},
    });
  });

  it('a condition recovery is stored and finishes the open workflows of its metric', async () => {
    const recovery = {
      enable: true,
      mode: 1 as const,
      conditions: [{ rule: [{ field: 'ctn.status', operator: 'eq', threshold: 'ok' }] }],
    };
    const f = fakes(testTask({ compress: full, recovery }));
    const a = alarm({ status: 'ok' });
    await processAlarmBatch([msg(a)], f.deps);
    expect(f.records.get(`42#${a.uuid}`)?.outcome).toBe('recovery');
    expect(f.events.map((e) => [e.body.event, e.body.type, e.eventId])).toEqual([
      ['RECOVERY', 'recovery', `42:${a.uuid}:RECOVERY`],
    ]);
    expect(f.jobs.map((j) => j.scene)).toEqual(['recovery']);
    expect(f.finished).toEqual([
      computeMetric(42, full, { ctn: { status: 'ok' }, level: 1, notice_time: 0 }),
    ]);
    expect(f.states.size).toBe(0);
  });
});
