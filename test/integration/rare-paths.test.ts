import { randomUUID } from 'node:crypto';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { hmacSign, md5Sign } from '../../shared/domain/auth/signature.ts';
import { deleteDue, putDue, queryDue } from '../../shared/domain/due/repository.ts';
import { listAttemptsOfJob } from '../../shared/domain/notifications/repository.ts';
import { event } from '../../shared/domain/events/payloads.ts';
import { webhookBundles } from '../../shared/domain/events/publish.ts';
import { sqs } from '../../shared/messaging/sqs.ts';
import { advanceClock, api, call, serviceNow, taskAuth, FIXED_SIGN_TIMESTAMP } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { ADMIN_APP } from '../support/seed.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { newWorkflow, operate, showWorkflow, syncClock } from '../support/workflows.ts';
import { stackLogLine } from '../support/stack-log.ts';

/**
 * Paths the functions take in production that the other suites leave out: every alarm intake as a
 * heartbeat's sign of life, a GET ping recovering a miss the scheduled check raised, dead letters of
 * every queue and dead due work, tasks that name directory records, workflows operated by users who
 * hold a permission, the pipeline's delayed work, and a notification run past 100 attempts. Together
 * with the rest of the suite they let the least-privilege check see every grant of every function in
 * use (docs/aws-operations.md, "Least privilege"). Users (test/fixtures/directory.json): 1 is a super
 * administrator, 2 and 3 are not.
 */
const ADMIN = 1;
const USER = 2;
const receiver = new TestReceiver();

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const eventsOf = (t: { id: number }, event: string): Received[] =>
  receiver.received.filter((r) => r.json?.data?.task?.id === t.id && r.json.event === event);

const waitEvents = (t: { id: number }, event: string, count = 1) =>
  until(`${count} ${event} event(s) of task ${t.id}`, async () =>
    eventsOf(t, event).length >= count ? eventsOf(t, event) : undefined,
  );

/** Reports an alarm to `/alarm/report` and waits for its record. */
async function report(t: CreatedTask, ctn: Record<string, unknown>): Promise<string> {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn },
  });
  expect(res.code).toBe(0);
  const uuid = res.data.uuid as string;
  await until(`the record of ${uuid}`, () => getAlarmRecord(t.id, uuid));
  return uuid;
}

/** The original's fixed signature in the query (turned on for the task first). */
async function fixedSign(t: CreatedTask) {
  const on = await api.put('/alarmtask/intake', { ...(await taskAuth(t)), fixed_sign: 1 });
  expect(on.code).toBe(0);
  const timestamp = FIXED_SIGN_TIMESTAMP;
  return { taskid: t.id, timestamp, sign: md5Sign(t.token, t.id, timestamp) };
}

/** What a notification job carries to render its message. */
const contextOf = (t: CreatedTask) => ({
  task: { id: t.id, name: t.name },
  history: {
    id: 1,
    uuid: randomUUID(),
    batch: 0,
    metric: '',
    level: 2,
    leve: 2,
    ctn: { hostname: 'web-1' },
    notice_time: 1_582_650_647,
  },
});

const heartbeatState = async (t: { id: number }) =>
  (
    await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.taskHeartbeat(t.id), ConsistentRead: true }),
    )
  ).Item as { last_seen?: number; missed?: boolean } | undefined;

describe('the alarm intake and the heartbeat', () => {
  it('takes an accepted alarm on every intake route as a sign of life of a task with a heartbeat', async () => {
    // Arrange: a week's interval (no check comes due meanwhile, whatever other suites do to the clock)
    const t = await createTask({ receiver: { channels: { webhook: receiver.url } } });
    const q = await fixedSign(t);
    expect((await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: 10_080 })).code).toBe(
      0,
    );
    const timestamp = await serviceNow();
    const sends: [string, () => Promise<{ status: number; code: number }>][] = [
      [
        'POST /alarm/report',
        () =>
          call('POST', '/alarm/report', {
            app: null,
            json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn: { n: 1 } },
          }),
      ],
      [
        'POST /alarm/alertmanager',
        () =>
          call('POST', '/alarm/alertmanager', {
            app: null,
            query: q,
            json: {
              version: '4',
              status: 'firing',
              alerts: [{ status: 'firing', labels: { alertname: 'Up' }, fingerprint: randomUUID() }],
            },
          }),
      ],
      [
        'POST /alarm/grafana',
        () =>
          call('POST', '/alarm/grafana', {
            app: null,
            query: q,
            json: {
              status: 'firing',
              alerts: [{ status: 'firing', labels: { alertname: 'Disk' }, fingerprint: randomUUID() }],
            },
          }),
      ],
      [
        'POST /alarm/jsonbody',
        () => call('POST', '/alarm/jsonbody', { app: null, query: q, json: { a: 1 } }),
      ],
      [
        'POST /alarm/rawbody',
        () => call('POST', '/alarm/rawbody', { app: null, query: q, body: 'disk full' }),
      ],
      ['POST /alarm/arms', () => call('POST', '/alarm/arms', { app: null, query: q, body: '{"alert":1}' })],
      [
        'GET /alarm/falcon',
        () =>
          call('GET', '/alarm/falcon', { app: null, query: { ...q, endpoint: 'web-1', status: 'PROBLEM' } }),
      ],
      [
        'POST /alarm/falcon',
        () =>
          call('POST', '/alarm/falcon', {
            app: null,
            query: q,
            form: { endpoint: 'web-2', status: 'PROBLEM' },
          }),
      ],
      [
        'POST /alarm/aliyun',
        () =>
          call('POST', '/alarm/aliyun', {
            app: null,
            query: q,
            form: { alertName: 'CPU', alertState: 'ALERT', curValue: '95', timestamp: '1764000000000' },
          }),
      ],
    ];
    for (const [route, send] of sends) {
      // The heartbeat state as if the task had been silent since the epoch.
      await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.taskHeartbeat(t.id),
          UpdateExpression: 'SET last_seen = :zero',
          ExpressionAttributeValues: { ':zero': 0 },
        }),
      );
      // Act
      const res = await send();
      // Assert
      expect([route, res.status, res.code]).toEqual([route, 200, 0]);
      expect((await heartbeatState(t))?.last_seen, route).toBeGreaterThanOrEqual(timestamp);
    }
    await waitEvents(t, 'ALARM', sends.length);
    await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: 0 });
  });

  it('raises a miss from the scheduled check, and a GET ping recovers it', async () => {
    // Arrange: a one-minute heartbeat
    const t = await createTask({ receiver: { channels: { webhook: receiver.url } } });
    const q = await fixedSign(t);
    expect(
      (await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: 1, level: 1 })).code,
    ).toBe(0);
    // Act: two silent minutes pass; the scheduled function checks
    await advanceClock(120);
    const [missed] = await waitEvents(t, 'ALARM');
    expect(missed.json.data.history.ctn).toMatchObject({ heartbeat: 'missed', interval_minutes: 1 });
    expect((await heartbeatState(t))?.missed).toBe(true);
    // Act: the task pings by GET
    const ping = await call('GET', '/alarm/heartbeat', { app: null, query: q });
    // Assert: the miss is recovered with its own content
    expect([ping.status, ping.code]).toEqual([200, 0]);
    const [recovery] = await waitEvents(t, 'RECOVERY');
    expect(recovery.json.data.history.ctn).toEqual(missed.json.data.history.ctn);
    await api.put('/alarmtask/heartbeat', { ...(await taskAuth(t)), interval: 0 });
  });
});

describe('dead letters of every queue', () => {
  // An `admin` route: called by the app holding that grant.
  const dlq = (query: Record<string, string | number>) =>
    api.get<{ dead_letters: Record<string, unknown>[]; more: boolean }>('/delivery/dlq', {
      query,
      app: ADMIN_APP,
    });
  const redrive = (body: Record<string, unknown>) =>
    api.post<{ redriven: number; message_ids: string[] }>('/delivery/dlq/redrive', body, { app: ADMIN_APP });
  const dlqUrls = inject('stack').dlqUrls;
  const deadLetter = (queue: 'alarm' | 'notify', body: unknown) =>
    sqs().send(new SendMessageCommand({ QueueUrl: dlqUrls[queue], MessageBody: JSON.stringify(body) }));

  it('lists a dead alarm as not processed, and redriven it is processed', async () => {
    // Arrange: an alarm that went to the alarm queue's dead-letter queue, beside two of another task
    const t = await createTask({ receiver: { channels: { webhook: receiver.url } } });
    const other = await createTask();
    const now = await serviceNow();
    const uuid = randomUUID();
    const alarmOf = (task: CreatedTask, id: string) => ({
      kind: 'alarm',
      uuid: id,
      task_id: task.id,
      level: 2,
      ctn: { dead: 'letter' },
      notice_time: now,
      reported_at: now,
    });
    for (const id of [randomUUID(), randomUUID()]) await deadLetter('alarm', alarmOf(other, id));
    await deadLetter('alarm', {
      kind: 'alarm',
      uuid,
      task_id: t.id,
      level: 2,
      ctn: { dead: 'letter' },
      notice_time: now,
      reported_at: now,
    });
    // Act
    const listed = await until('the dead alarm', async () => {
      const res = await dlq({ uid: ADMIN, queue: 'alarm', task_id: t.id });
      return res.data.dead_letters.find((d) => d.uuid === uuid);
    });
    const moved = await redrive({ uid: ADMIN, queue: 'alarm', message_id: listed.message_id as string });
    // Assert
    expect(listed).toMatchObject({ queue: 'alarm', task_id: t.id, processed: false });
    expect(moved.data).toMatchObject({ redriven: 1, message_ids: [listed.message_id] });
    expect(await until('the redriven alarm processed', () => getAlarmRecord(t.id, uuid))).toMatchObject({
      history: { ctn: { dead: 'letter' } },
    });
    // ... and the other task's, read on the way, are still there
    const rest = await dlq({ uid: ADMIN, queue: 'alarm', task_id: other.id });
    expect(rest.data.dead_letters).toHaveLength(2);
  });

  it('lists a dead notification job with its attempts, and redrives all of a task’s', async () => {
    // Arrange: a job that went to the notification queue's dead-letter queue, beside another task's
    const t = await createTask();
    const other = await createTask();
    const jobId = `${t.id}:${randomUUID()}:not_compress:email`;
    await deadLetter('notify', {
      kind: 'notify',
      job_id: `${other.id}:${randomUUID()}:not_compress:email`,
      task_id: other.id,
      scene: 'not_compress',
      channel: 'email',
      users: [99_999],
      context: contextOf(other),
    });
    await deadLetter('notify', {
      kind: 'notify',
      job_id: jobId,
      task_id: t.id,
      scene: 'not_compress',
      channel: 'email',
      users: [99_999],
      context: contextOf(t),
    });
    // Act
    const listed = await until('the dead job', async () => {
      const res = await dlq({ uid: ADMIN, queue: 'notify', task_id: t.id });
      return res.data.dead_letters.find((d) => d.job_id === jobId);
    });
    const moved = await redrive({ uid: ADMIN, queue: 'notify', all: 1, task_id: t.id });
    // Assert: redriven, it runs (the user is unknown: skipped) and leaves the dead-letter queue
    expect(listed).toMatchObject({ queue: 'notify', task_id: t.id, channel: 'email' });
    expect(moved.data.redriven).toBe(1);
    const attempts = await until('the redriven run', async () => {
      const all = await listAttemptsOfJob(jobId);
      return all.length ? all : undefined;
    });
    expect(attempts[0]).toMatchObject({ outcome: 'skipped', code: 'unknown_user' });
    expect((await dlq({ uid: ADMIN, queue: 'notify', task_id: t.id })).data.dead_letters).toEqual([]);
    expect((await dlq({ uid: ADMIN, queue: 'notify', task_id: other.id })).data.dead_letters).toHaveLength(1);
  });

  it('buries malformed due work at its first run, lists it by task and revives it by id and all at once', async () => {
    // Arrange: two announcements of a workflow of the task that can never run (their records are no list)
    const t = await createTask({ workflow: { enable: true, reminds: [] } });
    const { id: workflowId } = await newWorkflow(t);
    const now = await syncClock();
    const refs = [`dead-${randomUUID()}`, `dead-${randomUUID()}`];
    for (const ref of refs)
      await putDue({
        kind: 'workflow-announce',
        ref,
        due_at: now,
        payload: { workflow_id: workflowId, records: 'x' },
      });
    // Act: the next scheduled run, then the revives
    let dead: Record<string, unknown>[] = [];
    for (let run = 0; run < 5 && dead.length < 2; run++) {
      await advanceClock(61);
      const res = await dlq({ uid: ADMIN, queue: 'due', task_id: t.id, limit: 10 });
      dead = res.data.dead_letters.filter((d) => refs.includes(d.ref as string));
    }
    const one = await redrive({ uid: ADMIN, queue: 'due', message_id: dead[0].message_id as string });
    const all = await redrive({ uid: ADMIN, queue: 'due', all: 1, task_id: t.id });
    // Assert: each was tried once, with its reason, and said so; revived, both are due work again
    expect(dead).toHaveLength(2);
    for (const d of dead) expect(d).toMatchObject({ kind: 'workflow-announce', attempts: 1 });
    for (const ref of refs)
      expect(
        await stackLogLine(
          new RegExp(`ERROR due work malformed; kept for an operator kind=workflow-announce ref=${ref} `),
        ),
      ).toContain('error=MalformedDueWork: announcement: records must be a list of {workflow_id, sk}');
    expect([one.data.redriven, all.data.redriven]).toEqual([1, 1]);
    const left = await dlq({ uid: ADMIN, queue: 'due', task_id: t.id, limit: 10 });
    expect(left.data.dead_letters.filter((d) => refs.includes(d.ref as string))).toEqual([]);
    const shards = await Promise.all([0, 1, 2, 3].map((s) => queryDue(s, now + 10_000_000)));
    const due = shards.flat().filter((d) => refs.includes(d.ref));
    expect(due).toHaveLength(2);
    for (const d of due) await deleteDue(d);
  }, 120_000);
});

describe('tasks that name directory records', () => {
  it('shows a reader the task’s tags, template and alarm groups', async () => {
    const t = await createTask({
      task_tags: [1, 2],
      template: { template_id: 1 },
      receiver: { alarmgroup: [1], channels: { email: [1] } },
    });
    const res = await api.get('/alarmtask/view', { query: { uid: ADMIN, task_id: t.id } });
    expect(res.code).toBe(0);
    const view = JSON.stringify(res.data);
    for (const name of ['payments', 'core', 'short', 'oncall']) expect(view).toContain(name);
  });

  it('checks the users of an SMS channel on update, and drops a removed permission', async () => {
    const t = await createTask({ permission: { rw: [USER], ro: [3] } });
    const update = await api.put('/alarmtask/update', {
      ...(await taskAuth(t)),
      ...t.body,
      receiver: { channels: { sms: [USER, 3] } },
    });
    expect(update.code).toBe(0);
    // User 3 has no phone: named in the answer.
    expect(JSON.stringify(update.data)).toContain('lvbu');
    const fields = await api.put('/alarmtask/updatefields', {
      ...(await taskAuth(t)),
      filter_fields: ['permission'],
      permission: { rw: [USER], ro: [] },
    });
    expect(fields.code).toBe(0);
    const profile = await api.get('/user/profile', { query: { uid: 3 } });
    expect(profile.data.permission.read).not.toContain(t.id);
  });

  it('previews a message with the task’s predefined template', async () => {
    const t = await createTask({ template: { template_id: 1 } });
    const res = await api.post('/alarmtask/template/preview', {
      uid: ADMIN,
      task_id: t.id,
      scene: 'compressed',
      channel: 'email',
    });
    expect(res.code).toBe(0);
    expect(JSON.stringify(res.data)).toContain(`${t.name}: `);
  });
});

describe('workflows of users', () => {
  it('lets a user with a permission assign, close and reactivate, and traces the alarm to them', async () => {
    // Arrange: an alarm of a task with an alarm group, and its workflow
    const t = await createTask({
      permission: { rw: [USER], ro: [] },
      compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 600, not_match: 1 },
      workflow: { enable: true, reminds: [] },
      receiver: { alarmgroup: [1], channels: { webhook: receiver.url } },
    });
    const uuid = await report(t, { host: 'web-1' });
    const [generated] = await until('the workflow', async () => {
      const all = eventsOf(t, 'WORKFLOW');
      return all.length ? all : undefined;
    });
    const id = generated.json.data.workflow.id as number;
    // Act
    const assigned = await operate('assign', { ids: [id], remark: 'yours', created_by: USER, assignto: [3] });
    const closed = await operate('close', { ids: [id], remark: 'noise', created_by: USER });
    const reopened = await operate('reactive', { ids: [id], remark: 'again', created_by: USER });
    const trace = await api.get('/alarmtask/alarm/trace', { query: { uid: USER, task_id: t.id, uuid } });
    // Assert
    for (const res of [assigned, closed, reopened]) expect(res.code).toBe(0);
    expect(trace.code).toBe(0);
    expect(trace.data.workflow).toMatchObject({ id, status: 0 });
    expect(JSON.stringify(trace.data.workflow)).toContain('zhangsan');
    expect(JSON.stringify(trace.data.receivers)).toContain('oncall');
  });

  it('publishes an announcement the operation could not, from the scheduled run', async () => {
    // Arrange: a claim by a user, whose announcement is due again (as if its publishing had failed)
    const t = await createTask({
      permission: { rw: [USER], ro: [] },
      receiver: { channels: { webhook: receiver.url } },
      workflow: { enable: true, reminds: [] },
    });
    const { id } = await newWorkflow(t);
    expect((await operate('claim', { ids: [id], created_by: USER })).code).toBe(0);
    const [claimed] = await waitEvents(t, 'WORKFLOW', 2);
    const records = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :pipe)',
        ExpressionAttributeValues: { ':pk': keys.workflowCollection(id), ':pipe': 'PIPE#' },
        ConsistentRead: true,
      }),
    );
    const claim = (records.Items ?? []).find((r) => r.status === 1) as { sk: string };
    const now = await syncClock();
    await putDue({
      kind: 'workflow-announce',
      ref: `${id}:again`,
      due_at: now,
      payload: { scene: 'claim', records: [{ workflow_id: id, sk: claim.sk }] },
    });
    // Act
    await advanceClock(0);
    // Assert: the claim is announced again, with the same event id, naming the user
    const again = await waitEvents(t, 'WORKFLOW', 3);
    const repeat = again.filter(
      (e) => e.headers['webhook-id'] === again[again.length - 1].headers['webhook-id'],
    );
    expect(repeat.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(repeat[0].json.data)).toContain('zhangsan');
    expect(claimed).toBeDefined();
    expect((await showWorkflow(id)).status).toBe(1);
  });
});

describe('the pipeline and its delayed work', () => {
  it('keeps the first webhook attempts of a task kept under 30 days in a delivery log of their own', async () => {
    const t = await createTask({ receiver: { channels: { webhook: receiver.url } } });
    expect((await api.put('/alarmtask/retention', { ...(await taskAuth(t)), retention_days: 7 })).code).toBe(
      0,
    );
    const uuid = await report(t, { short: 'lived' });
    await waitEvents(t, 'ALARM');
    const delivered = await until('the delivered attempt', async () => {
      const res = await api.get<{ deliveries: Record<string, unknown>[] }>('/alarmtask/deliveries', {
        query: { uid: ADMIN, task_id: t.id, kind: 'webhook' },
      });
      return res.data.deliveries?.find((d) => String(d.id).includes(uuid) && d.outcome === 'delivered');
    });
    expect(delivered).toMatchObject({ attempt: 1, status: 200 });
  });

  it('finishes the open workflow of a metric when its delayed recovery comes due', async () => {
    const t = await createTask({
      receiver: { channels: { webhook: receiver.url } },
      compress: { enable: true, method: 4, strategy: 1, strategy_cycle: 600, not_match: 1 },
      recovery: { enable: true, mode: 2, delay_interval: 1 },
      workflow: { enable: true, reminds: [] },
    });
    await report(t, { n: 1 });
    const [generated] = await waitEvents(t, 'WORKFLOW');
    const id = generated.json.data.workflow.id as number;
    await advanceClock(2 * 60);
    await waitEvents(t, 'RECOVERY');
    expect(
      await until('the workflow done', async () => ((await showWorkflow(id)).status === 2 ? 2 : undefined)),
    ).toBe(2);
  });

  it('processes a consumer batch of alarms of several tasks, reading the tasks together', async () => {
    // Arrange: one message each for two tasks no consumer has read yet, sent in one batch
    const [a, b] = [await createTask(), await createTask()];
    const now = await serviceNow();
    const uuids = [randomUUID(), randomUUID()];
    const alarmOf = (task: CreatedTask, uuid: string) => ({
      kind: 'alarm',
      uuid,
      task_id: task.id,
      level: 2,
      ctn: { batch: 'of two' },
      notice_time: now,
      reported_at: now,
    });
    // Act
    await sqs().send(
      new SendMessageBatchCommand({
        QueueUrl: inject('stack').queueUrls.alarm,
        Entries: [
          { Id: 'a', MessageBody: JSON.stringify(alarmOf(a, uuids[0])) },
          { Id: 'b', MessageBody: JSON.stringify(alarmOf(b, uuids[1])) },
        ],
      }),
    );
    // Assert
    await until('both recorded', () => getAlarmRecord(a.id, uuids[0]));
    expect(await until('both recorded', () => getAlarmRecord(b.id, uuids[1]))).toMatchObject({
      history: { ctn: { batch: 'of two' } },
    });
  });

  it('delivers a consumer batch of webhook events of several tasks', async () => {
    // Arrange: a bundle each for two tasks the webhook consumer has not read for a while (its task
    // cache keeps them TASK_CACHE_SECONDS, 5 s, after their PINGs), sent in one batch
    const paths = [`/a-${randomUUID()}`, `/b-${randomUUID()}`];
    const [a, b] = await Promise.all(
      paths.map((path) => createTask({ receiver: { channels: { webhook: `${receiver.url}${path}` } } })),
    );
    const pinged = () =>
      paths.every((p) => receiver.received.some((r) => r.path === p && r.json?.event === 'PING'));
    await until('both PINGs', async () => pinged() || undefined);
    await new Promise((r) => setTimeout(r, 6_000));
    await syncClock();
    const ids = [`batch-${randomUUID()}`, `batch-${randomUUID()}`];
    const [bundleA] = webhookBundles(a.id, [
      { eventId: ids[0], body: event('ALARM', 'compress_disable', {}) },
    ]);
    const [bundleB] = webhookBundles(b.id, [
      { eventId: ids[1], body: event('ALARM', 'compress_disable', {}) },
    ]);
    // Act
    await sqs().send(
      new SendMessageBatchCommand({
        QueueUrl: inject('stack').queueUrls.webhook,
        Entries: [
          { Id: 'a', MessageBody: JSON.stringify(bundleA) },
          { Id: 'b', MessageBody: JSON.stringify(bundleB) },
        ],
      }),
    );
    // Assert: each task's receiver gets its own event
    const delivered = (id: string) => receiver.received.find((r) => r.headers['webhook-id'] === id);
    const [first, second] = [
      await until('a', async () => delivered(ids[0])),
      await until('b', async () => delivered(ids[1])),
    ];
    expect([first.path, second.path]).toEqual(paths);
  });

  it('records a notification run to more than 100 receivers with every attempt', async () => {
    const t = await createTask();
    const jobId = `${t.id}:${randomUUID()}:not_compress:email`;
    const users = Array.from({ length: 101 }, (_, i) => 900_000 + i);
    await sqs().send(
      new SendMessageCommand({
        QueueUrl: inject('stack').queueUrls.notify,
        MessageBody: JSON.stringify({
          kind: 'notify',
          job_id: jobId,
          task_id: t.id,
          scene: 'not_compress',
          channel: 'email',
          users,
          context: contextOf(t),
        }),
      }),
    );
    const attempts = await until('101 attempts', async () => {
      const all = await listAttemptsOfJob(jobId);
      return all.length >= 101 ? all : undefined;
    });
    expect(attempts).toHaveLength(101);
    expect(new Set(attempts.map((a) => a.target)).size).toBe(101);
  });
});
