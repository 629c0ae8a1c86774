import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { deliveriesOfAlarm } from '../../shared/domain/deliveries/trace.ts';
import { event } from '../../shared/domain/events/payloads.ts';
import { publishWebhookEvents } from '../../shared/domain/events/publish.ts';
import { verifyWebhookSignature } from '../../shared/domain/webhooks/signature.ts';
import { api, call, serviceNow } from '../support/client.ts';
import { FakeClient } from '../support/fakes.ts';
import { ADMIN_APP, TEST_APP } from '../support/seed.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { eachOnce, UNDER_CHAOS } from '../support/chaos.ts';

/**
 * The deliveries read side (API guide §13.4, §14) on the real local stack: a task's attempt log with
 * paging, the webhook dead-letter queue listed and redriven, the test-send, the template preview and
 * the deliveries of one alarm for its trace. Users (test/fixtures/directory.json): 1 is a super
 * administrator (role 9) and creates the tasks, 2 holds no permission, 3 is given read-only ones.
 */
const ADMIN = 1;
const STRANGER = 2;
const READER = 3;
const fakes = new FakeClient(inject('fakes').url);
const receivers: TestReceiver[] = [];

async function receiver(behaviour: (r: Received) => { status?: number }): Promise<TestReceiver> {
  const r = await new TestReceiver().start();
  // PINGs (task creation) are answered at once; the rest per `behaviour`.
  r.behaviour = (req) => (req.json?.event === 'PING' ? { status: 200 } : behaviour(req));
  receivers.push(r);
  return r;
}

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Reports an alarm through POST /alarm/report; its uuid. */
async function report(task: CreatedTask, ctn: Record<string, unknown>): Promise<string> {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: task.id, timestamp, sign: hmacSign(task.token, task.id, timestamp), level: 2, ctn },
  });
  expect(res.code).toBe(0);
  return res.data.uuid as string;
}

// biome-ignore lint/suspicious/noExplicitAny: response rows of arbitrary shape
type Row = Record<string, any>;

const deliveries = (query: Record<string, string | number>) =>
  api.get<{ deliveries: Row[]; next_cursor: string }>('/alarmtask/deliveries', { query });

/** Every page of a task's deliveries. */
async function allDeliveries(taskId: number, kind: string, limit: number) {
  const rows: Row[] = [];
  let pages = 0;
  let cursor = '';
  do {
    const res = await deliveries({ uid: ADMIN, task_id: taskId, kind, limit, ...(cursor ? { cursor } : {}) });
    expect(res.code).toBe(0);
    expect(res.data.deliveries.length).toBeLessThanOrEqual(limit);
    rows.push(...res.data.deliveries);
    cursor = res.data.next_cursor;
    pages++;
  } while (cursor && pages < 20);
  return { rows, pages };
}

const requestsOf = (r: TestReceiver, id: string) => r.received.filter((x) => x.headers['webhook-id'] === id);

/** The fields `names` of `o` that it has. */
const pick = (o: object | undefined, names: string[]) =>
  Object.fromEntries(Object.entries(o ?? {}).filter(([k]) => names.includes(k)));

describe('GET /alarmtask/deliveries', () => {
  let task: CreatedTask;
  let hook: TestReceiver;
  let uuid: string;

  beforeAll(async () => {
    let calls = 0;
    hook = await receiver(() => (++calls <= 2 ? { status: 500 } : { status: 200 }));
    task = await createTask({
      receiver: { channels: { email: [1], webhook: `${hook.url}/in?token=secret-abc` } },
      permission: { ro: [READER] },
    });
    uuid = await report(task, { hostname: 'db-3', marker: randomUUID() });
    await hook.waitFor((all) => all.filter((r) => r.json?.event === 'ALARM').length >= 3, 20_000);
  });

  it('lists failed then delivered webhook attempts newest first, across pages', async () => {
    // Arrange: the attempts are recorded right after the calls
    const eventId = `${task.id}:${uuid}:ALARM`;
    const ping = String(hook.events('PING')[0].headers['webhook-id']);
    await until('four webhook attempts', async () => {
      const { rows } = await allDeliveries(task.id, 'webhook', 100);
      return rows.length >= 4 ? rows : undefined;
    });
    // Act
    const { rows, pages } = await allDeliveries(task.id, 'webhook', 2);
    // Assert
    const made = rows.map((r) => [r.id, r.attempt, r.outcome, r.status]);
    if (UNDER_CHAOS) {
      // A copy of a message may make an attempt of the same number (a row of its own, maybe a 500).
      expect(pages).toBeGreaterThanOrEqual(2);
      expect(made.filter(([id, , outcome]) => id === eventId && outcome === 'failed').length).toBeGreaterThan(
        0,
      );
      expect(made).toContainEqual([eventId, expect.any(Number), 'delivered', 200]);
      expect(made).toContainEqual([ping, 1, 'delivered', 200]);
    } else {
      expect(pages).toBe(2);
      expect(made).toEqual([
        [eventId, 3, 'delivered', 200],
        [eventId, 2, 'failed', 500],
        [eventId, 1, 'failed', 500],
        [ping, 1, 'delivered', 200],
      ]);
    }
    for (const failed of rows.filter((r) => r.outcome === 'failed'))
      expect(failed).toMatchObject({
        id: eventId,
        kind: 'webhook',
        event: 'ALARM',
        channel: 'webhook',
        status: 500,
        error: 'HTTP 500',
      });
    expect(rows.every((r) => r.target === hook.url)).toBe(true);
    expect(JSON.stringify(rows)).not.toContain('secret-abc');
    expect(rows.map((r) => r.at_ms)).toEqual([...rows.map((r) => r.at_ms)].sort((a, b) => b - a));
  });

  it('lists an alarm delivered at the first try (logged with its alarm) beside the task\u2019s PING', async () => {
    // Arrange: a receiver that answers at once: the alarm's event is delivered by the alarm consumer
    // and logged in its batch's alarm log item; the PING by the webhook consumer, in a log of its own.
    const fast = await receiver(() => ({ status: 200 }));
    const t = await createTask({ receiver: { channels: { email: [1], webhook: fast.url } } });
    const id = await report(t, { hostname: 'db-4', marker: randomUUID() });
    await fast.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
    const ping = String(fast.events('PING')[0].headers['webhook-id']);
    // Act
    const { rows } = await until('both attempts listed', async () => {
      const all = await allDeliveries(t.id, 'webhook', 1);
      return all.rows.length >= 2 ? all : undefined;
    });
    // Assert
    expect(
      eachOnce(
        rows.map((r) => [r.id, r.attempt, r.outcome]),
        (r) => r,
      ),
    ).toEqual([
      [`${t.id}:${id}:ALARM`, 1, 'delivered'],
      [ping, 1, 'delivered'],
    ]);
    const record = await until('the alarm record', () => getAlarmRecord(t.id, id));
    const trace = await deliveriesOfAlarm(t.id, id, record.processed_at);
    expect(trace.webhooks[0].attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'delivered']]);
  });

  it('merges the notification attempts in (kind=all) and reads for a read-only user', async () => {
    // Arrange
    const jobId = `${task.id}:${uuid}:not_compress:email`;
    // Act
    const rows = await until('the e-mail attempt', async () => {
      const res = await deliveries({ uid: READER, task_id: task.id, limit: 100 });
      expect(res.code).toBe(0);
      return res.data.deliveries.some((r) => r.id === jobId) ? res.data.deliveries : undefined;
    });
    // Assert
    expect(rows.find((r) => r.id === jobId)).toMatchObject({
      kind: 'notify',
      scene: 'not_compress',
      channel: 'email',
      target: 'uid 1 an***@example.com',
      attempt: 1,
      outcome: 'delivered',
    });
    const webhookRows = rows.filter((r) => r.kind === 'webhook');
    if (UNDER_CHAOS) expect(webhookRows.length).toBeGreaterThanOrEqual(4);
    else expect(webhookRows).toHaveLength(4);
  });

  it.each([
    [{ uid: STRANGER }, 403, 'user [2] has no permission on task'],
    [{ uid: 999_999 }, 404, 'user [999999] not found'],
    [{ kind: 'sms' }, 422, 'kind must be one of webhook, notify, all'],
    [{ limit: 0 }, 422, 'limit must be an integer from 1 to 100'],
    [{ cursor: 'bogus!' }, 422, 'cursor is not a valid cursor'],
  ])('refuses %o with %i', async (change, status, msg) => {
    const res = await deliveries({ uid: ADMIN, task_id: task.id, ...change });
    expect(res.status).toBe(status);
    expect(res.msg).toContain(msg);
  });
});

describe('the webhook dead-letter queue', () => {
  // Dead letters are the grant `admin`'s: an app holding only `read` is refused whoever it names.
  const dlq = (query: Record<string, string | number>, app = ADMIN_APP) =>
    api.get<{ dead_letters: Row[]; more: boolean }>('/delivery/dlq', { query, app });
  const redrive = (body: Record<string, unknown>, app = ADMIN_APP) =>
    api.post<{ redriven: number; message_ids: string[]; more: boolean }>('/delivery/dlq/redrive', body, {
      app,
    });

  it('lists dead events with the last reason, refuses non-admins, redrives one and then all', async () => {
    // Arrange: a receiver that always fails; two events that exhaust their 7 attempts (~10 s)
    let failing = true;
    const hook = await receiver(() => ({ status: failing ? 503 : 200 }));
    const task = await createTask({ receiver: { channels: { webhook: hook.url } } });
    await hook.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
    const [first, second] = [`dlq-${randomUUID()}`, `dlq-${randomUUID()}`];
    await publishWebhookEvents(task.id, [
      { eventId: first, body: event('ALARM', 'compress_disable', { n: 1 }) },
      { eventId: second, body: event('ALARM', 'compress_disable', { n: 2 }) },
    ]);

    // Act: list until both are dead
    const dead = await until(
      'two dead letters',
      async () => {
        const res = await dlq({ uid: ADMIN, queue: 'webhook', task_id: task.id });
        expect(res.code).toBe(0);
        return res.data.dead_letters.length >= 2 ? res.data.dead_letters : undefined;
      },
      60_000,
    );

    // Assert: each with what it carries and the reason of its 7th failed attempt
    const one = dead.find((d) => d.event_id === first) as Row;
    expect(one).toMatchObject({
      queue: 'webhook',
      kind: 'webhook',
      task_id: task.id,
      event: 'ALARM',
      type: 'compress_disable',
      attempts: 7,
      reason: { outcome: 'failed', attempt: 7 },
    });
    // Its 7th attempt was sent whatever the task's circuit says: the last attempt always is
    expect(pick(one.reason, ['status', 'error', 'target'])).toEqual({
      status: 503,
      error: 'HTTP 503',
      target: hook.url,
    });
    expect(one.first_failure_at).toBeLessThanOrEqual(one.last_failure_at);
    // The consumer put it there itself, a new message: listings are its only receives
    expect(one.receive_count).toBeGreaterThanOrEqual(1);
    const sentFirst = requestsOf(hook, first).length;
    expect(sentFirst).toBeGreaterThanOrEqual(3);
    expect(sentFirst).toBeLessThanOrEqual(7);
    // ... listing consumed nothing: both are still there
    expect((await dlq({ uid: ADMIN, queue: 'webhook', task_id: task.id })).data.dead_letters).toHaveLength(2);
    // ... and only a super administrator sees or moves dead letters
    expect((await dlq({ uid: ADMIN, queue: 'webhook' }, TEST_APP)).msg).toContain('lacks the grant [admin]');
    expect((await redrive({ uid: ADMIN, queue: 'webhook', all: 1 }, TEST_APP)).status).toBe(403);

    // Act: the receiver recovers; redrive the first by its message id
    failing = false;
    const moved = await redrive({ uid: ADMIN, queue: 'webhook', message_id: one.message_id });

    // Assert: delivered with the same webhook-id and body, its attempts numbered on from 8 (the first
    // may be held while the task's circuit waits for its probe)
    expect(moved.data).toMatchObject({ redriven: 1, message_ids: [one.message_id], more: false });
    await hook.waitFor(() => requestsOf(hook, first).length === sentFirst + 1);
    const calls = requestsOf(hook, first);
    expect(calls[sentFirst].body).toBe(calls[0].body);
    const delivered = await until('the delivered attempt', async () => {
      const { rows } = await allDeliveries(task.id, 'webhook', 100);
      return rows.find((r) => r.id === first && r.outcome === 'delivered');
    });
    expect(delivered).toMatchObject({ status: 200 });
    expect(delivered.attempt).toBeGreaterThanOrEqual(8);
    const left = (await dlq({ uid: ADMIN, queue: 'webhook', task_id: task.id })).data.dead_letters;
    expect(left.map((d) => d.event_id)).toEqual([second]);

    // Act: redrive all of the task's dead letters
    const all = await redrive({ uid: ADMIN, queue: 'webhook', all: 1, task_id: task.id });

    // Assert
    expect(all.data).toMatchObject({ redriven: 1, more: false });
    await until('the second delivered', async () => {
      const { rows } = await allDeliveries(task.id, 'webhook', 100);
      return rows.find((r) => r.id === second && r.outcome === 'delivered');
    });
    expect((await dlq({ uid: ADMIN, queue: 'webhook', task_id: task.id })).data.dead_letters).toEqual([]);
  }, 120_000);

  it('refuses a redrive naming neither a message nor all, and an unknown message', async () => {
    const neither = await redrive({ uid: ADMIN, queue: 'webhook' });
    expect(neither.status).toBe(422);
    expect(neither.msg).toBe('message_id or all is required (one of them)');
    const unknown = await redrive({ uid: ADMIN, queue: 'notify', message_id: randomUUID() });
    expect(unknown.status).toBe(404);
  });

  it('lists the scheduler’s dead due work (queue=due) and the alarm queue with its note', async () => {
    const due = await dlq({ uid: ADMIN, queue: 'due', limit: 5 });
    expect(due.code).toBe(0);
    expect(Array.isArray(due.data.dead_letters)).toBe(true);
    const alarm = await dlq({ uid: ADMIN, queue: 'alarm', limit: 1 });
    expect(alarm.data.note).toContain('records no error per alarm');
  });
});

/** A port nothing listens on. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

describe('POST /alarmtask/webhook/test', () => {
  const test = (uid: number, taskId: number) =>
    api.post<Row>('/alarmtask/webhook/test', { uid, task_id: taskId });

  it('PINGs a live receiver now, signed, and returns the recorded attempt', async () => {
    // Arrange
    const hook = await receiver(() => ({ status: 200 }));
    const task = await createTask({ receiver: { channels: { webhook: `${hook.url}/t?token=abc` } } });
    await hook.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
    // Act
    const res = await test(ADMIN, task.id);
    // Assert
    expect(res.code).toBe(0);
    expect(res.data).toMatchObject({
      event: 'PING',
      type: 'ping',
      channel: 'webhook',
      attempt: 1,
      outcome: 'delivered',
      status: 200,
      target: hook.url,
    });
    expect(res.data.duration_ms).toBeGreaterThanOrEqual(0);
    const [got] = requestsOf(hook, res.data.webhook_id);
    expect(got.json).toEqual({ event: 'PING', type: 'ping', data: {}, extra: {} });
    const h = got.headers;
    expect(
      verifyWebhookSignature(
        task.secret,
        String(h['webhook-id']),
        String(h['webhook-timestamp']),
        got.body,
        String(h['webhook-signature']),
      ),
    ).toBe(true);
    const logged = await until('the test attempt in the log', async () => {
      const { rows } = await allDeliveries(task.id, 'webhook', 100);
      return rows.find((r) => r.id === res.data.webhook_id);
    });
    expect(logged).toMatchObject({ outcome: 'delivered', status: 200 });
  });

  it('shows the error of a receiver that is down', async () => {
    const task = await createTask({
      receiver: { channels: { webhook: `http://127.0.0.1:${await deadPort()}/x` } },
    });
    const res = await test(ADMIN, task.id);
    expect(res.code).toBe(0);
    expect(res.data).toMatchObject({ outcome: 'failed', error: 'ECONNREFUSED' });
    expect(res.data.status).toBeUndefined();
  });

  it('409s a task without a webhook and 403s a read-only user', async () => {
    const task = await createTask({ permission: { ro: [READER] } });
    const none = await test(ADMIN, task.id);
    expect(none.status).toBe(409);
    expect(none.msg).toBe(`task [${task.id}] has no webhook`);
    const ro = await test(READER, task.id);
    expect(ro.status).toBe(403);
  });
});

describe('POST /alarmtask/template/preview', () => {
  const preview = (body: Record<string, unknown>) => api.post<Row>('/alarmtask/template/preview', body);
  let task: CreatedTask;

  beforeAll(async () => {
    task = await createTask({
      template: {
        template_id: 0,
        udf: {
          compressed: { email: { format: 1, template: 'CUSTOM {task.name} on {history.ctn.hostname}' } },
        },
      },
    });
  });

  it('renders the custom template with a sample alarm, and with a stored one', async () => {
    // Arrange
    const uuid = await report(task, { hostname: 'db-42' });
    // Act
    const sample = await preview({ uid: ADMIN, task_id: task.id, scene: 'compressed', channel: 'email' });
    const stored = await until('the stored alarm', async () => {
      const res = await preview({
        uid: ADMIN,
        task_id: task.id,
        scene: 'compressed',
        channel: 'email',
        uuid,
      });
      return res.code === 0 ? res : undefined;
    });
    // Assert
    expect(sample.data).toEqual({
      scene: 'compressed',
      channel: 'email',
      source: 'custom',
      alarm: 'sample',
      format: 1,
      title: `[local] ${task.name}: alarm (error)`,
      text: `CUSTOM ${task.name} on web-1`,
    });
    expect(stored.data).toMatchObject({ alarm: 'stored', uuid, text: `CUSTOM ${task.name} on db-42` });
  });

  it('renders the default of another scene and channel', async () => {
    const res = await preview({ uid: ADMIN, task_id: task.id, scene: 'recovery', channel: 'dinggroup' });
    expect(res.data).toMatchObject({
      source: 'default',
      format: 2,
      title: `[local] ${task.name}: recovered`,
    });
    expect(res.data.text).toContain(`- **Task**: ${task.name}`);
  });

  it('cuts an SMS to 300 characters as the provider would', async () => {
    const uuid = await report(task, { detail: 'z'.repeat(600) });
    const res = await until('the stored alarm', async () => {
      const r = await preview({ uid: ADMIN, task_id: task.id, scene: 'not_compress', channel: 'sms', uuid });
      return r.code === 0 ? r : undefined;
    });
    expect([...res.data.text]).toHaveLength(300);
    expect(res.data.text.endsWith('zz…')).toBe(true);
  });

  it.each([
    [{ scene: 'nope' }, 422, 'scene must be one of'],
    [{ channel: 'webhook' }, 422, 'channel must be one of'],
    [{ uuid: randomUUID() }, 404, 'not found'],
    [{ uid: STRANGER }, 403, 'has no permission'],
  ])('refuses %o with %i', async (change, status, msg) => {
    const res = await preview({
      uid: ADMIN,
      task_id: task.id,
      scene: 'compressed',
      channel: 'sms',
      ...change,
    });
    expect(res.status).toBe(status);
    expect(res.msg).toContain(msg);
  });
});

describe('deliveriesOfAlarm (the trace)', () => {
  it('finds the webhook event and the e-mail of an alarm, every attempt and the message sent', async () => {
    // Arrange
    let calls = 0;
    const hook = await receiver(() => (++calls === 1 ? { status: 502 } : { status: 200 }));
    const task = await createTask({ receiver: { channels: { email: [1], webhook: hook.url } } });
    const marker = randomUUID();
    const uuid = await report(task, { hostname: 'db-8', marker });
    await fakes.waitFor('mail', async () => (await fakes.mails()).filter((m) => m.html.includes(marker)));
    await hook.waitFor((all) => all.filter((r) => r.json?.event === 'ALARM').length >= 2);
    const record = await until('the alarm record', () => getAlarmRecord(task.id, uuid));

    // Act
    const out = await until('both deliveries recorded', async () => {
      const d = await deliveriesOfAlarm(task.id, uuid, record.processed_at);
      const done =
        d.webhooks[0]?.attempts.some((a) => a.outcome === 'delivered') && d.notifications.length > 0;
      return done ? d : undefined;
    });

    // Assert
    expect(out.webhooks).toHaveLength(1);
    expect(out.webhooks[0]).toMatchObject({ event_id: `${task.id}:${uuid}:ALARM`, event: 'ALARM' });
    const made = out.webhooks[0].attempts.map((a) => [a.attempt, a.outcome, a.status]);
    if (UNDER_CHAOS) {
      // A copy of the event may make an attempt of the same number (and be the one answered 502).
      expect(made).toContainEqual([1, expect.any(String), expect.any(Number)]);
      expect(made.filter(([, outcome]) => outcome === 'failed').map(([, , status]) => status)).toEqual([502]);
      expect(made).toContainEqual([expect.any(Number), 'delivered', 200]);
    } else {
      expect(made).toEqual([
        [1, 'failed', 502],
        [2, 'delivered', 200],
      ]);
    }
    expect(out.notifications).toHaveLength(1);
    const [mail] = out.notifications;
    expect(mail).toMatchObject({
      job_id: `${task.id}:${uuid}:not_compress:email`,
      scene: 'not_compress',
      channel: 'email',
      status: 'delivered',
      targets: ['uid 1 an***@example.com'],
      message: { format: 3, title: `[local] ${task.name}: alarm (error)` },
    });
    expect(mail.message?.text).toContain(marker);
    expect(mail.attempts.map((a) => a.outcome)).toEqual(['delivered']);
  }, 60_000);
});
