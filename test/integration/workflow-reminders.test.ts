import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findJobs } from '../../shared/domain/notifications/jobs.ts';
import { fireReminder } from '../../shared/domain/workflows/reminders.ts';
import { REMIND_KIND } from '../../shared/domain/workflows/announce.ts';
import { advanceClock, api, serviceNow, taskAuth } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import type { CreatedTask } from '../support/tasks.ts';
import { createWorkflowTask, newWorkflow, operate, showWorkflow, syncClock } from '../support/workflows.ts';

/**
 * Reminders (API guide §10.5, §9.8), driven by the service's test clock. Intervals are long (10 h) so
 * that other suites moving the shared clock by minutes cannot fire them early.
 */
const INTERVAL = 600; // minutes
const PAST_INTERVAL = INTERVAL * 60 + 60; // seconds

let receiver: TestReceiver;

beforeAll(async () => {
  receiver = await new TestReceiver().start();
});
afterAll(async () => {
  await receiver.stop();
});

const pendingOnce = { mode: 'once', status: 0, interval: INTERVAL, reuse_receiver: 1 };
const processingCycle = {
  mode: 'cycle',
  status: 1,
  interval: INTERVAL,
  reuse_receiver: 0,
  receiver: { channels: { sms: [4] } },
};

async function reminderTask(reminds: unknown[]): Promise<CreatedTask> {
  return createWorkflowTask(reminds, { receiver: { channels: { webhook: receiver.url, email: [1] } } });
}

/** The remind records (pipeline status 3) of a workflow. */
async function reminds(id: number): Promise<{ props: { remind: { interval: number; status: number } } }[]> {
  return (await showWorkflow(id)).pipelines.filter((p: { status: number }) => p.status === 3);
}

/** A workflow's reminder events, each once (a receiver de-duplicates on `webhook-id`, as ours do). */
function remindEvents(id: number, type: 'remind_pending' | 'remind_processing') {
  const events = receiver.events('WORKFLOW', type).filter((r) => r.json.data.workflow.id === id);
  return [...new Map(events.map((r) => [r.headers['webhook-id'], r])).values()];
}

/** A job of a task (its item or its entry in the task's notification log), if it exists. */
async function jobOf(taskId: number, jobId: string) {
  const now = (await serviceNow()) * 1000;
  return (await findJobs(taskId, [jobId], { fromMs: now - 3 * 86_400_000, toMs: now + 60_000 }))[0];
}

async function waitForJob(taskId: number, jobId: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const state = await jobOf(taskId, jobId);
    if (state) return state;
    if (Date.now() > deadline) throw new Error(`notification job ${jobId} never reached the consumer`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('workflow reminders', () => {
  it('a once pending reminder fires one time, with its record, event and notification', async () => {
    // Arrange
    const task = await reminderTask([pendingOnce]);
    const { id } = await newWorkflow(task);
    expect(await reminds(id)).toEqual([]);
    // Act
    await advanceClock(PAST_INTERVAL);
    await advanceClock(PAST_INTERVAL);
    // Assert
    const records = await reminds(id);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      status: 3,
      remark: '',
      created_by: 0,
      creator: null,
      props: { remind: { interval: INTERVAL, status: 0 } },
    });
    await receiver.waitFor(() => remindEvents(id, 'remind_pending').length >= 1);
    const [event] = remindEvents(id, 'remind_pending');
    expect(event.json).toMatchObject({
      event: 'WORKFLOW',
      type: 'remind_pending',
      data: { task: { id: task.id, name: task.name }, workflow: { id, status: 0 } },
    });
    expect(event.json.data).not.toHaveProperty('pipeline');
    expect(event.json.data.history).toHaveProperty('leve');
    // The task's receivers (reuse_receiver 1): its e-mail channel got a job.
    const job = await waitForJob(task.id, `${event.headers['webhook-id']}:email`);
    expect(job.task_id).toBe(task.id);
    expect(remindEvents(id, 'remind_pending')).toHaveLength(1);
  });

  it('claim cancels the pending reminders and arms the processing ones; a cycle re-arms; processed stops it', async () => {
    // Arrange
    const task = await reminderTask([pendingOnce, processingCycle]);
    const { id } = await newWorkflow(task);
    // Act
    expect((await operate('claim', { ids: [id] })).code).toBe(0);
    await advanceClock(PAST_INTERVAL);
    const afterOne = await reminds(id);
    await advanceClock(PAST_INTERVAL);
    const afterTwo = await reminds(id);
    expect((await operate('processed', { ids: [id], remark: 'ok', created_by: 1 })).code).toBe(0);
    await advanceClock(PAST_INTERVAL);
    const afterDone = await reminds(id);
    // Assert
    expect(afterOne.map((r) => r.props.remind)).toEqual([{ interval: INTERVAL, status: 1 }]);
    expect(afterTwo.map((r) => r.props.remind)).toEqual([
      { interval: INTERVAL, status: 1 },
      { interval: INTERVAL, status: 1 },
    ]);
    expect(afterDone).toHaveLength(2);
    await receiver.waitFor(() => remindEvents(id, 'remind_processing').length >= 2);
    expect(remindEvents(id, 'remind_pending')).toHaveLength(0);
    // Own receiver (reuse_receiver 0): sms to user 4, not the task's e-mail.
    const webhookId = remindEvents(id, 'remind_processing')[0].headers['webhook-id'];
    expect((await waitForJob(task.id, `${webhookId}:sms`)).task_id).toBe(task.id);
    expect(await jobOf(task.id, `${webhookId}:email`)).toBeUndefined();
  });

  it('close cancels every reminder; reactive arms the pending ones again', async () => {
    const task = await reminderTask([pendingOnce]);
    const { id } = await newWorkflow(task);
    expect((await operate('close', { ids: [id], remark: 'noise' })).code).toBe(0);
    await advanceClock(PAST_INTERVAL);
    expect(await reminds(id)).toHaveLength(0);

    expect((await operate('reactive', { ids: [id], remark: 'real' })).code).toBe(0);
    await advanceClock(PAST_INTERVAL);
    expect((await reminds(id)).map((r) => r.props.remind)).toEqual([{ interval: INTERVAL, status: 0 }]);
  });

  it('assign keeps the reminders of the current status', async () => {
    const task = await reminderTask([pendingOnce]);
    const { id } = await newWorkflow(task);
    expect((await operate('assign', { ids: [id], remark: 'r', assignto: [2] })).code).toBe(0);
    await advanceClock(PAST_INTERVAL);
    expect(await reminds(id)).toHaveLength(1);
  });

  it('is held while the task is paused and fires once the pause has passed', async () => {
    // Arrange: pause for 24 h; the reminder is due after 10 h.
    const task = await reminderTask([pendingOnce]);
    const { id } = await newWorkflow(task);
    const pause = await api.put('/alarmtask/pause', { ...(await taskAuth(task)), time: 1440 });
    expect(pause.code).toBe(0);
    // Act / Assert
    await advanceClock(PAST_INTERVAL);
    expect(await reminds(id)).toHaveLength(0);
    await advanceClock(86_400 - PAST_INTERVAL + 60);
    expect(await reminds(id)).toHaveLength(1);
    await receiver.waitFor(() => remindEvents(id, 'remind_pending').length === 1);
  });

  it('is held while the task is stopped and fires once it is started again', async () => {
    const task = await reminderTask([pendingOnce]);
    const { id } = await newWorkflow(task);
    expect((await api.put('/alarmtask/stop', await taskAuth(task))).code).toBe(0);
    await advanceClock(PAST_INTERVAL);
    await advanceClock(PAST_INTERVAL);
    expect(await reminds(id)).toHaveLength(0);
    expect((await api.put('/alarmtask/start', await taskAuth(task))).code).toBe(0);
    await advanceClock(61);
    expect(await reminds(id)).toHaveLength(1);
  });

  it('records a reminder once when its due work runs twice (a retry after a failure)', async () => {
    // Arrange: a reminder due now, for a fresh pending workflow.
    const task = await reminderTask([pendingOnce]);
    const { id } = await newWorkflow(task);
    const now = await syncClock();
    const item = {
      kind: REMIND_KIND,
      ref: `${id}:0:1`,
      due_at: now,
      payload: { workflow_id: id, index: 0, epoch: 1 },
    };
    // Act
    const results = await Promise.all([
      fireReminder(item, now),
      fireReminder(item, now),
      fireReminder(item, now),
    ]);
    // Assert
    expect(results).toEqual([undefined, undefined, undefined]);
    const records = await reminds(id);
    expect(records).toHaveLength(1);
    // A stale epoch (the workflow moved on) records nothing.
    await fireReminder({ ...item, due_at: now + 1, payload: { ...item.payload, epoch: 0 } }, now + 1);
    expect(await reminds(id)).toHaveLength(1);
  });
});
