import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishWorkflowsOfMetric } from '../../shared/domain/workflows/service.ts';
import { defaultDeps } from '../../shared/domain/workflows/workflow-deps.ts';
import { findJobs } from '../../shared/domain/notifications/jobs.ts';
import { advanceClock, serviceNow } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import type { CreatedTask } from '../support/tasks.ts';
import { createWorkflowTask, loadTask, newWorkflow, operate } from '../support/workflows.ts';

/**
 * Every WORKFLOW event reaches the task's webhook (a real HTTP server on 127.0.0.1) with the payload
 * of API guide §12.3 / §12.4.
 */
let receiver: TestReceiver;
let task: CreatedTask;

beforeAll(async () => {
  receiver = await new TestReceiver().start();
  task = await createWorkflowTask([], {
    receiver: { alarmgroup: [2], channels: { webhook: receiver.url, email: [1] } },
    permission: { rw: [2], ro: [] },
  });
});

afterAll(async () => {
  await receiver.stop();
});

/** The WORKFLOW events of one workflow and type, once at least `count` arrived. */
async function eventsOf(id: number, type: string, count = 1) {
  const match = () => receiver.events('WORKFLOW', type).filter((r) => r.json.data.workflow.id === id);
  await receiver.waitFor(() => match().length >= count);
  return match().map((r) => r.json);
}

/** The records of a task's jobs (their item or their task's notification log), once all exist. */
async function pollJobs(taskId: number, jobIds: string[]) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const now = (await serviceNow()) * 1000;
    const states = await findJobs(taskId, jobIds, { fromMs: now - 3 * 86_400_000, toMs: now + 60_000 });
    if (states.length === jobIds.length) return states;
    if (Date.now() > deadline) throw new Error(`notification jobs not consumed: ${jobIds.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('workflow events', () => {
  it('sends generated with task, history and workflow, and no pipeline', async () => {
    // Arrange / Act
    const { id, history } = await newWorkflow(task, { ctn: { hostname: 'web-9', code: 500 }, level: 1 });
    // Assert
    const [body] = await eventsOf(id, 'generated');
    expect(body).toEqual({
      event: 'WORKFLOW',
      type: 'generated',
      data: {
        task: { id: task.id, name: task.name },
        history: {
          id: history.id,
          uuid: history.uuid,
          batch: history.batch,
          metric: history.metric,
          level: 1,
          leve: 1,
          ctn: { hostname: 'web-9', code: 500 },
          notice_time: history.notice_time,
        },
        workflow: { id, status: 0, created_at: expect.any(Number) },
        order: { key: `wf:${id}`, seq: 1 },
      },
      extra: {},
    });
  });

  it('sends each operation with the pipeline remark and user, assignto for assign', async () => {
    // Arrange
    const { id } = await newWorkflow(task);
    // Act
    const other = (await newWorkflow(task)).id;
    const results = [
      await operate('assign', { ids: [id], remark: 'yours', created_by: 1, assignto: [4] }),
      await operate('claim', { ids: [id], created_by: 2, remark: 'mine' }),
      await operate('processed', { ids: [id], created_by: 2, remark: 'fixed' }),
      await operate('close', { ids: [other], remark: 'noise' }),
      await operate('reactive', { ids: [other], remark: 'not noise', created_by: 1 }),
    ];
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0, 0]);
    // Assert
    const ann = { uid: 1, username: 'Ann Lee', user: 'annlee' };
    const zs = { uid: 2, username: '张三', user: 'zhangsan' };
    const [assign] = await eventsOf(id, 'assign');
    const [claim] = await eventsOf(id, 'claim');
    const [processed] = await eventsOf(id, 'processed');
    const [close] = await eventsOf(other, 'close');
    const [reactive] = await eventsOf(other, 'reactive');
    expect(assign.data.pipeline).toEqual({
      remark: 'yours',
      user: ann,
      assignto: [{ uid: 4, username: 'Bob Stone', user: 'bobstone' }],
    });
    expect(assign.data.workflow.status).toBe(0);
    expect(claim.data).toMatchObject({ workflow: { id, status: 1 }, pipeline: { remark: 'mine', user: zs } });
    expect(claim.data.pipeline).not.toHaveProperty('assignto');
    expect(processed.data).toMatchObject({
      workflow: { id, status: 2 },
      pipeline: { remark: 'fixed', user: zs },
    });
    expect(close.data).toMatchObject({
      workflow: { id: other, status: 9 },
      pipeline: { remark: 'noise', user: null },
    });
    expect(reactive.data).toMatchObject({
      workflow: { id: other, status: 0 },
      pipeline: { remark: 'not noise', user: ann },
    });
    for (const e of [assign, claim, processed, close, reactive]) {
      expect(e.data.task).toEqual({ id: task.id, name: task.name });
      expect(Object.keys(e.data.history).sort()).toEqual(
        ['batch', 'ctn', 'id', 'leve', 'level', 'metric', 'notice_time', 'uuid'].sort(),
      );
    }
  });

  it('queues notification jobs for the task receivers, alarm groups merged in', async () => {
    // Arrange: the task notifies e-mail [1] and alarm group 2 (sms [4, 6]).
    const { id } = await newWorkflow(task);
    // Act
    expect((await operate('claim', { ids: [id], created_by: 1 })).code).toBe(0);
    // Assert: one job per channel, under the event's id, reaches the notification consumer.
    await eventsOf(id, 'claim');
    const [claim] = receiver.events('WORKFLOW', 'claim').filter((r) => r.json.data.workflow.id === id);
    const eventId = String(claim.headers['webhook-id']);
    const jobs = await pollJobs(task.id, [`${eventId}:email`, `${eventId}:sms`]);
    expect(jobs.map((j) => j.task_id)).toEqual([task.id, task.id]);
  });

  it('sends one event per workflow of a batch, each with a distinct webhook-id', async () => {
    const ids = [(await newWorkflow(task)).id, (await newWorkflow(task)).id, (await newWorkflow(task)).id];
    await operate('close', { ids, remark: 'bulk' });
    const all = await Promise.all(ids.map(async (id) => (await eventsOf(id, 'close'))[0]));
    expect(all.map((e) => e.data.workflow.id)).toEqual(ids);
    const headers = receiver
      .events('WORKFLOW', 'close')
      .filter((r) => ids.includes(r.json.data.workflow.id))
      .map((r) => r.headers['webhook-id']);
    expect(new Set(headers).size).toBe(3);
  });

  it('announces a recovery finish as processed, by user 0 with remark recovered', async () => {
    const metric = 'a'.repeat(40);
    const { id } = await newWorkflow(task, { metric });
    await finishWorkflowsOfMetric({ task: await loadTask(task.id), metric });
    const [body] = await eventsOf(id, 'processed');
    expect(body.data).toMatchObject({
      workflow: { id, status: 2 },
      pipeline: { remark: 'recovered', user: null },
    });
  });

  it('publishes from the outbox on the next scheduled run when publishing failed right after the commit', async () => {
    // Arrange: the queue is unavailable for the creating process (a failure the stack cannot produce).
    const failing = {
      ...defaultDeps,
      publishWebhookEvents: async () => {
        throw new Error('queue unavailable');
      },
    };
    // Act
    const { id, created } = await newWorkflow(task, {}, failing);
    // Assert: committed, nothing sent yet; the scheduled run sends it.
    expect(created).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(
      receiver.events('WORKFLOW', 'generated').filter((r) => r.json.data.workflow.id === id),
    ).toHaveLength(0);
    await advanceClock(1);
    const [body] = await eventsOf(id, 'generated');
    expect(body.data.workflow).toMatchObject({ id, status: 0 });
  });
});
