import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { advanceClock, call, serviceNow } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { createWorkflowTask, newWorkflow, operate } from '../support/workflows.ts';

/**
 * The order promise of API guide §12.6: events of one workflow and of one compression metric carry
 * `data.order` {key, seq}, whose seq increases along the workflow's steps and the metric's alarms.
 * They may arrive in any order (retries, parallel consumers, a queue that reorders: this suite runs
 * under SQS_CHAOS=1 in `npm run test:chaos`); sorted by seq, they read as what happened.
 */
let receiver: TestReceiver;

beforeAll(async () => {
  receiver = await new TestReceiver().start();
});

afterAll(async () => {
  await receiver.stop();
});

/** Events matching `pick`, once each (delivery is at least once: a copy has the same webhook-id). */
function distinct(pick: (r: Received) => boolean): Received[] {
  const seen = new Set<string>();
  return receiver.received.filter((r) => {
    const id = String(r.headers['webhook-id']);
    if (!pick(r) || seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const bySeq = (a: Received, b: Received) => a.json.data.order.seq - b.json.data.order.seq;

describe('the order promise (API guide §12.6)', () => {
  it("numbers a workflow's events along its steps, reminders' and operations' alike", async () => {
    // Arrange: a workflow whose task reminds every minute while it is being processed
    const task = await createWorkflowTask([{ mode: 'cycle', status: 1, interval: 1, reuse_receiver: 1 }], {
      receiver: { channels: { webhook: receiver.url } },
    });
    const { id } = await newWorkflow(task);
    const op = async (name: string, extra: Record<string, unknown> = {}) => {
      const res = await operate(name, { ids: [id], created_by: 1, remark: name, ...extra });
      expect(res.code, `${name}: ${res.msg}`).toBe(0);
    };
    // Act: operations, with the reminder firing between them (an assign keeps the status: the
    // reminder goes on)
    await op('claim');
    await advanceClock(61);
    await op('assign', { assignto: [2] });
    await advanceClock(61);
    await op('close');
    await op('reactive');
    await op('claim');
    await op('processed');
    const expected = [
      'generated',
      'claim',
      'remind_processing',
      'assign',
      'remind_processing',
      'close',
      'reactive',
      'claim',
      'processed',
    ];
    const events = await until('the workflow events', () => {
      const got = distinct((r) => r.json?.event === 'WORKFLOW' && r.json.data.workflow.id === id);
      return got.length >= expected.length ? got : undefined;
    });
    // Assert: every event carries the workflow's key and its own seq; by seq they are the steps
    expect(events).toHaveLength(expected.length);
    for (const e of events) expect(e.json.data.order).toEqual({ key: `wf:${id}`, seq: expect.any(Number) });
    const sorted = [...events].sort(bySeq);
    expect(sorted.map((e) => e.json.type)).toEqual(expected);
    expect(sorted.map((e) => e.json.data.order.seq)).toEqual(expected.map((_, i) => i + 1));
  });

  it("numbers a compression metric's events along the alarms its state took, whatever their arrival", async () => {
    // Arrange: windows of three alarms, the first and the third notified (cycle-count, N = 3)
    const task: CreatedTask = await createTask({
      receiver: { channels: { webhook: receiver.url } },
      compress: { enable: true, method: 4, strategy: 3, strategy_count: 3, strategy_cycle: 60, not_match: 1 },
    });
    // Act: twelve alarms of one metric, reported at once (they reach the consumers in any order)
    const timestamp = await serviceNow();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        call('POST', '/alarm/report', {
          app: null,
          json: { taskid: task.id, timestamp, sign: hmacSign(task.token, task.id, timestamp), ctn: { n } },
        }),
      ),
    );
    expect(answers.map((a) => a.code)).toEqual(Array(12).fill(0));
    const events = await until('the notified alarms', () => {
      const got = distinct((r) => r.json?.event === 'ALARM' && r.json.data.task.id === task.id);
      return got.length >= 8 ? got : undefined;
    });
    // Assert: one key, distinct seqs; by seq, each window's first alarm and then its third
    expect(events).toHaveLength(8);
    const keys = new Set(events.map((e) => e.json.data.order.key));
    expect([...keys]).toEqual([`m:${events[0].json.data.history.metric}`]);
    const sorted = [...events].sort(bySeq);
    const seqs = sorted.map((e) => e.json.data.order.seq);
    expect(new Set(seqs).size).toBe(8);
    // The metric's k-th alarm is seq k*100 + 50: windows of three take alarms 1-3, 4-6, ...
    const places = seqs.map((s) => (s - 50) / 100);
    expect(places).toEqual([1, 3, 4, 6, 7, 9, 10, 12]);
    const batches = sorted.map((e) => e.json.data.history.batch);
    for (let w = 0; w < 4; w++) expect(batches[2 * w]).toBe(batches[2 * w + 1]);
    expect(new Set(batches).size).toBe(4);
  });
});
