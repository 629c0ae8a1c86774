import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { claimAsJson, mailedLink, readLink, reportAlarm } from '../support/claims.ts';
import { checkCoverage } from '../../shared/domain/alarms/oncall-gaps.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { COVERAGE_CHECK_KIND } from '../../shared/domain/schedules/model.ts';
import { advanceClock, api, call, serviceNow } from '../support/client.ts';
import { FakeClient } from '../support/fakes.ts';
import { fixture } from '../support/fixture.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { createSchedule, DAY, finalOf, oncallOf, utcLocal } from '../support/schedules.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { createWorkflowTask, newWorkflow, operate } from '../support/workflows.ts';
import { recentNotificationAttempts } from '../support/notifications.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * Receivers that name a schedule, end to end on the local stack (API guide §18.5, §18.6): an alarm
 * pages whoever is on call when its message is made (e-mail through the local SMTP server), the
 * decision trace names the schedule and the shift, nobody on call is recorded as skipped, workflow
 * notices page the person on call, and a coverage gap ahead raises one alarm and recovers once filled.
 */
const fakes = new FakeClient(inject('fakes').url);
const receiver = new TestReceiver();

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

const emailOf = (uid: number) => fixture.users.find((u) => u.uid === uid)?.email as string;

async function report(task: CreatedTask, body: Record<string, unknown>) {
  const timestamp = await serviceNow();
  return call('POST', '/alarm/report', {
    app: null,
    json: { taskid: task.id, timestamp, sign: hmacSign(task.token, task.id, timestamp), level: 2, ...body },
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the trace under test
async function traceWithOncall(task: CreatedTask, uuid: string): Promise<any> {
  return until('the trace with the schedule answer', async () => {
    const res = await api.get('/alarmtask/alarm/trace', { query: { uid: 1, task_id: task.id, uuid } });
    return res.code === 0 && res.data.receivers?.oncall?.length ? res.data : undefined;
  });
}

const mailsWith = (marker: string) =>
  fakes.waitFor('mail', async () => (await fakes.mails()).filter((m) => m.html.includes(marker)));

describe('an alarm to a task whose receiver names a schedule', () => {
  it('reaches the person on call by e-mail, and the trace names the schedule and the shift', async () => {
    // Arrange: a daily rotation of users 2 and 4; the task's only receiver is the schedule
    const s = await createSchedule({
      layers: [
        { name: 'primary', start: '2026-01-01T00:00', turn: { every: 1, unit: 'day' }, users: [2, 4] },
      ],
    });
    const task = await createTask({ receiver: { oncall: [{ schedule_id: s.id, channels: ['email'] }] } });
    const marker = randomUUID();
    // Act
    const res = await report(task, { ctn: { hostname: 'db-3', marker } });
    // Assert: the mail went to whoever the schedule had on call when the message was made
    expect(res.code).toBe(0);
    const [mail] = await mailsWith(marker);
    const trace = await traceWithOncall(task, res.data.uuid);
    const [answer] = trace.receivers.oncall;
    const onCall = await oncallOf(s.id, answer.at);
    expect(mail.to).toEqual([emailOf(onCall.users[0].uid)]);
    expect(answer).toMatchObject({
      schedule_id: s.id,
      name: s.body.name,
      scene: 'not_compress',
      uids: [onCall.users[0].uid],
      source: { kind: 'layer', layer: 0, name: 'primary' },
      shift: onCall.shift,
      channels: ['email'],
    });
    expect(answer.text).toContain(
      `schedule [${s.id}] ${s.body.name}: uid ${onCall.users[0].uid} on call by layer 0 (primary), shift`,
    );
    expect(trace.delivery.text).toBe('email delivered');
    const job = trace.notifications.find((n: { channel: string }) => n.channel === 'email');
    expect(job.oncall[0]).toMatchObject({ schedule_id: s.id, uids: [onCall.users[0].uid] });
  });

  it('records nobody on call as skipped in the trace and the deliveries, never silence', async () => {
    // Arrange: the only layer starts in a month, no fallback: nobody is on call now
    const now = await serviceNow();
    const s = await createSchedule({
      layers: [
        { name: 'later', start: utcLocal(now + 30 * DAY), turn: { every: 1, unit: 'week' }, users: [2] },
      ],
    });
    const task = await createTask({
      receiver: { oncall: [{ schedule_id: s.id, channels: ['email', 'sms'] }] },
    });
    // Act
    const res = await report(task, { ctn: { hostname: 'db-4' } });
    // Assert
    const trace = await traceWithOncall(task, res.data.uuid);
    expect(trace.receivers.oncall[0]).toMatchObject({
      schedule_id: s.id,
      uids: [],
      source: { kind: 'none' },
    });
    expect(trace.receivers.oncall[0].text).toContain('skipped: nobody on call');
    const jobs = await until('both skipped jobs', async () => {
      const t = await api.get('/alarmtask/alarm/trace', {
        query: { uid: 1, task_id: task.id, uuid: res.data.uuid },
      });
      return t.data.notifications?.length === 2 ? t.data.notifications : undefined;
    });
    expect(jobs.map((j: { job_id: string }) => j.job_id).sort()).toEqual([
      `${task.id}:${res.data.uuid}:not_compress:email:s${s.id}`,
      `${task.id}:${res.data.uuid}:not_compress:sms:s${s.id}`,
    ]);
    for (const j of jobs) {
      expect(j.status).toBe('skipped');
      expect(j.attempts[0]).toMatchObject({
        outcome: 'skipped',
        code: 'nobody_on_call',
        detail: 'nobody on call',
      });
    }
  });

  it('takes a report override that names a schedule, and refuses an unknown one with 4000', async () => {
    // Arrange
    const s = await createSchedule({
      layers: [{ name: 'one', start: '2026-01-01T00:00', turn: { every: 1, unit: 'week' }, users: [4] }],
    });
    const task = await createTask();
    const marker = randomUUID();
    // Act
    const ok = await report(task, {
      ctn: { marker },
      receiver: { oncall: [{ schedule_id: s.id, channels: ['email'] }] },
    });
    const unknown = await report(task, {
      ctn: { a: 1 },
      receiver: { oncall: [{ schedule_id: 999_999, channels: ['email'] }] },
    });
    // Assert: the override replaced the task's receiver (user 1) with the person on call (user 4)
    expect(ok.code).toBe(0);
    const [mail] = await mailsWith(marker);
    expect(mail.to).toEqual([emailOf(4)]);
    expect([unknown.status, unknown.code, unknown.msg]).toEqual([
      200,
      4000,
      'receiver.oncall: schedule [999999] not found',
    ]);
  });

  it('GET /alarmtask/oncall answers who the task pages over the coming days, per receiver, with gaps', async () => {
    const s = await createSchedule();
    const task = await createTask({
      receiver: {
        channels: { email: [1] },
        dispatch: [
          {
            conditions: [{ rule: [{ field: 'ctn.a', operator: 'eq', threshold: '1' }] }],
            receiver: { oncall: [{ schedule_id: s.id, channels: ['sms'] }] },
          },
        ],
      },
    });
    const res = await api.get('/alarmtask/oncall', { query: { uid: 1, task_id: task.id, days: 3 } });
    expect(res.code).toBe(0);
    const [r] = res.data.receivers;
    expect(r).toMatchObject({
      path: 'receiver.dispatch.0.receiver',
      schedule: { id: s.id, name: s.body.name },
      channels: ['sms'],
      gaps: [],
      coverage_pct: 100,
    });
    expect(res.data.to - res.data.from).toBe(3 * DAY);
    expect(r.shifts).toEqual((await finalOf(s.id, res.data.from, res.data.to)).shifts);
    const denied = await api.get('/alarmtask/oncall', { query: { uid: 5, task_id: task.id } });
    expect(denied.status).toBe(403);
  });
});

describe('workflow notices', () => {
  it('page the person on call for every operation', async () => {
    // Arrange: a workflow task whose receiver is the schedule (user 4 always on call)
    const s = await createSchedule({
      layers: [{ name: 'one', start: '2026-01-01T00:00', turn: { every: 1, unit: 'week' }, users: [4] }],
    });
    const task = await createWorkflowTask([], {
      receiver: { oncall: [{ schedule_id: s.id, channels: ['email'] }] },
    });
    const w1 = await newWorkflow(task);
    const w2 = await newWorkflow(task);
    // Act
    for (const [op, id, extra] of [
      ['claim', w1.id, {}],
      ['assign', w1.id, { assignto: [3], remark: 'yours' }],
      ['processed', w1.id, { remark: 'fixed' }],
      ['close', w2.id, { remark: 'noise' }],
      ['reactive', w2.id, { remark: 'again' }],
    ] as const) {
      const res = await operate(op, { ids: [id], created_by: 1, ...extra });
      expect(res.code, op).toBe(0);
    }
    // Assert: every operation's e-mail went to user 4
    const scenes = ['claim', 'assign', 'processed', 'close', 'reactive'];
    const attempts = await until('an e-mail per operation', async () => {
      const a = (await recentNotificationAttempts(task.id, 50)).filter((x) => x.channel === 'email');
      return scenes.every((sc) => a.some((x) => x.scene === sc && x.outcome === 'delivered')) ? a : undefined;
    });
    expect(attempts.filter((a) => scenes.includes(a.scene)).every((a) => a.target.startsWith('uid 4 '))).toBe(
      true,
    );
  });

  it('page the person on call from their own claim link, and tell them of the claim they made', async () => {
    // Arrange: a task whose alarms open workflows and page the schedule (user 4 always on call, with
    // rw on the task), so the on-call e-mail carries user 4's own claim link
    const s = await createSchedule({
      layers: [{ name: 'one', start: '2026-01-01T00:00', turn: { every: 1, unit: 'week' }, users: [4] }],
    });
    const task = await createWorkflowTask([], {
      compress: { enable: true, method: 3, strategy: 1, strategy_cycle: 10 },
      permission: { rw: [4], ro: [] },
      receiver: { oncall: [{ schedule_id: s.id, channels: ['email'] }] },
    });
    const marker = randomUUID();
    await reportAlarm(task, marker);
    const token = await mailedLink(emailOf(4), marker);
    const link = await readLink(token);
    // Act: user 4 claims from the link
    const claimed = await claimAsJson(token);
    // Assert: claimed as user 4, and the claim notice resolved the schedule again and went to user 4
    expect([claimed.status, link?.uid]).toEqual([200, 4]);
    const attempts = await until('the claim e-mail', async () => {
      const a = (await recentNotificationAttempts(task.id, 50)).filter((x) => x.scene === 'claim');
      return a.some((x) => x.outcome === 'delivered') ? a : undefined;
    });
    expect(attempts.every((a) => a.channel === 'email' && a.target.startsWith('uid 4 '))).toBe(true);
  });
});

describe('coverage gaps as alarms', () => {
  /** A task's events of a kind (each once under the chaos queue, by webhook-id). */
  const events = (t: { id: number }, event: string): Received[] =>
    eachOnce(
      receiver.received.filter((r) => r.json?.data?.task?.id === t.id && r.json.event === event),
      (r) => r.headers['webhook-id'],
    );
  const settle = () => new Promise((r) => setTimeout(r, 1_500));

  it('raises one alarm for a gap three days ahead, none on repeated checks, and recovers it once filled', async () => {
    // Arrange: a task to alarm; a schedule covering all the time, then an edit from three days ahead
    // whose layer starts four hours later: a gap [gap, gap + 4 h)
    const alarmTask = await createTask({ receiver: { channels: { webhook: receiver.url } } });
    const now = await serviceNow();
    const gap = Math.floor((now + 3 * DAY) / 60) * 60;
    const coverage = { horizon_days: 14, alarm_task_id: alarmTask.id };
    const s = await createSchedule({ fallback: [6], coverage });
    const edit = {
      ...s.body,
      id: s.id,
      effective_from: gap,
      fallback: [],
      layers: [
        { name: 'after', start: utcLocal(gap + 4 * 3600), turn: { every: 1, unit: 'week' }, users: [2] },
      ],
    };
    expect((await api.put('/schedule/update', edit)).code).toBe(0);
    expect((await finalOf(s.id, now, now + 4 * DAY)).gaps).toEqual([{ start: gap, end: gap + 4 * 3600 }]);
    // Act: the scheduled run checks the changed schedule
    await advanceClock(0);
    // Assert: one alarm to the task, naming the gap
    await receiver.waitFor(() => events(alarmTask, 'ALARM').length >= 1);
    const [raised] = events(alarmTask, 'ALARM');
    expect(raised.json.data.history.ctn).toMatchObject({
      oncall_gap: 'nobody on call',
      schedule_id: s.id,
      gap_start: gap,
      gap_end: gap + 4 * 3600,
    });
    // Repeated checks raise nothing more
    const item = {
      kind: COVERAGE_CHECK_KIND,
      ref: String(s.id),
      due_at: now,
      payload: { schedule_id: s.id },
    };
    await checkCoverage(item, await serviceNow());
    await checkCoverage(item, await serviceNow());
    await advanceClock(0);
    await settle();
    expect(events(alarmTask, 'ALARM')).toHaveLength(1);
    // An override filling it: recovered
    const filled = await api.post('/schedule/override', {
      uid: 1,
      id: s.id,
      start: gap,
      end: gap + 4 * 3600,
      user: 3,
    });
    expect(filled.code).toBe(0);
    await advanceClock(0);
    await receiver.waitFor(() => events(alarmTask, 'RECOVERY').length >= 1);
    expect(events(alarmTask, 'RECOVERY')[0].json.data.history.ctn).toEqual(raised.json.data.history.ctn);
    await settle();
    expect(events(alarmTask, 'ALARM')).toHaveLength(1);
  });
  it('recovers the gaps a deleted schedule had raised', async () => {
    // Arrange: a schedule whose only layer starts in two days: a gap from now, raised
    const alarmTask = await createTask({ receiver: { channels: { webhook: receiver.url } } });
    const now = await serviceNow();
    const s = await createSchedule({
      coverage: { horizon_days: 7, alarm_task_id: alarmTask.id },
      layers: [
        { name: 'later', start: utcLocal(now + 2 * DAY), turn: { every: 1, unit: 'week' }, users: [2] },
      ],
    });
    await advanceClock(0);
    await receiver.waitFor(() => events(alarmTask, 'ALARM').length >= 1);
    // Act
    const deleted = await call('DELETE', '/schedule', { form: { uid: 1, id: s.id } });
    await advanceClock(0);
    // Assert
    expect(deleted.code).toBe(0);
    await receiver.waitFor(() => events(alarmTask, 'RECOVERY').length >= 1);
    expect(events(alarmTask, 'RECOVERY')[0].json.data.history.ctn).toMatchObject({ schedule_id: s.id });
  });
});
