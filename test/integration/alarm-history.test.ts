import { describe, expect, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { api, call, serviceNow, taskAuth } from '../support/client.ts';
import { type CreatedTask, createTask, type TaskBody } from '../support/tasks.ts';
import { UNDER_CHAOS } from '../support/chaos.ts';

/**
 * A task's alarm history (API guide §13.3) through HTTP on the local stack: every processed alarm is
 * in the task's alarm log — stored or not, notified or filtered — newest first, filtered, paged; one
 * alarm by uuid or history id; read permission; the retention setting.
 */

async function report(t: CreatedTask, ctn: Record<string, unknown>, level = 1): Promise<string> {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn, level },
  });
  if (res.code !== 0) throw new Error(`report refused: ${res.code} ${res.msg}`);
  return res.data.uuid as string;
}

// biome-ignore lint/suspicious/noExplicitAny: response shapes
type Any = any;

async function history(t: { id: number }, query: Record<string, string | number> = {}, uid = 1) {
  return api.get<Any>('/alarmtask/alarms', { query: { uid, task_id: t.id, ...query } });
}

/** Waits until the task's log holds `count` alarms. */
async function waitHistory(t: { id: number }, count: number): Promise<Any[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await history(t, { limit: 100 });
    if (res.code === 0 && res.data.alarms.length >= count) return res.data.alarms;
    if (Date.now() > deadline) throw new Error(`history of task ${t.id}: ${JSON.stringify(res.data)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const whitelist: TaskBody = {
  filter: {
    enable: true,
    mode: 1,
    conditions: [{ rule: [{ field: 'ctn.app', operator: 'eq', threshold: 'pay' }], level: 9 }],
    not_match: 0,
  },
  permission: { rw: [], ro: [2] },
};

describe('GET /alarmtask/alarms', () => {
  it('lists every processed alarm newest first, the filtered ones too, with content for stored ones', async () => {
    // Arrange
    const t = await createTask(whitelist);
    const a = await report(t, { app: 'pay', n: 1 }, 2);
    const b = await report(t, { app: 'web', n: 2 }, 1);
    const c = await report(t, { app: 'pay', n: 3 }, 3);
    // Act
    const alarms = await waitHistory(t, 3);
    // Assert
    expect(new Set(alarms.map((x: Any) => x.uuid))).toEqual(new Set([a, b, c]));
    const times = alarms.map((x: Any) => x.created_at);
    expect([...times].sort((p, q) => q - p)).toEqual(times);
    const byUuid = new Map(alarms.map((x: Any) => [x.uuid, x]));
    expect(byUuid.get(a)).toMatchObject({
      outcome: 'notified',
      decision: 'compress_disable',
      level: 2,
      stored: true,
      ctn: { app: 'pay', n: 1 },
    });
    expect(byUuid.get(a).history_id).toBeGreaterThan(0);
    expect(byUuid.get(b)).toMatchObject({
      outcome: 'filtered',
      decision: 'drop',
      stored: false,
      history_id: 0,
    });
    expect(byUuid.get(b).ctn).toBeUndefined();
    expect(byUuid.get(c)).toMatchObject({ level: 3, level_name: 'urgent' });
  });

  it('filters by level, outcome and time, and pages with a cursor that covers every alarm once', async () => {
    // Arrange
    const t = await createTask(whitelist);
    const sent: string[] = [];
    for (let i = 0; i < 7; i++)
      sent.push(await report(t, { app: i % 3 === 0 ? 'web' : 'pay', i }, i % 2 === 0 ? 3 : 1));
    await waitHistory(t, 7);
    // Act: pages of 3
    const seen: string[] = [];
    let cursor = '';
    let pages = 0;
    do {
      const res = await history(t, { limit: 3, ...(cursor ? { cursor } : {}) });
      expect(res.code).toBe(0);
      expect(res.data.alarms.length).toBeLessThanOrEqual(3);
      seen.push(...res.data.alarms.map((x: Any) => x.uuid));
      cursor = res.data.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    // Assert: every alarm (a queue's second delivery of one, logged again, may show on a second page)
    if (!UNDER_CHAOS) expect(seen.length).toBe(7);
    expect(new Set(seen)).toEqual(new Set(sent));
    const urgent = await history(t, { level: 3 });
    expect(urgent.data.alarms.map((x: Any) => x.uuid).sort()).toEqual(
      sent.filter((_, i) => i % 2 === 0).sort(),
    );
    const filtered = await history(t, { outcome: 'filtered' });
    expect(filtered.data.alarms.map((x: Any) => x.uuid).sort()).toEqual(
      sent.filter((_, i) => i % 3 === 0).sort(),
    );
    const now = await serviceNow();
    expect((await history(t, { from: now + 3600, to: now + 7200 })).data.alarms).toEqual([]);
  });

  it('refuses a user without permission (403), an unknown user or task (404), a bad cursor or window (422)', async () => {
    const t = await createTask(whitelist);
    expect((await history(t, {}, 2)).code).toBe(0); // read-only permission
    const denied = await history(t, {}, 3);
    expect([denied.status, denied.code, denied.msg]).toEqual([
      403,
      403,
      `user [3] has no permission on task [${t.id}]`,
    ]);
    expect((await history(t, {}, 999_999)).code).toBe(404);
    expect((await history({ id: 999_999_999 })).code).toBe(404);
    const bad = await history(t, { cursor: 'not-a-cursor' });
    expect([bad.status, bad.code]).toEqual([422, 422]);
    // Forged cursors: a day far outside the window (a read would walk years of days), a negative count.
    const forge = (day: number, taken: number) =>
      Buffer.from(JSON.stringify([day, '0#x', taken])).toString('base64url');
    const today = Math.floor((await serviceNow()) / 86_400);
    expect((await history(t, { cursor: forge(today + 2000, 0) })).status).toBe(422);
    expect((await history(t, { cursor: forge(today, -1) })).status).toBe(422);
    const wide = await history(t, { from: 0, to: 90 * 86_400 });
    expect(wide.code).toBe(422);
    expect((await history(t, { outcome: 'maybe' })).code).toBe(422);
    expect((await api.get('/alarmtask/alarms', { query: { uid: 1, task_id: t.id }, app: null })).status).toBe(
      401,
    );
  });
});

describe('GET /alarmtask/alarm', () => {
  it('finds one alarm by uuid or by history id; an unstored one by its log entry', async () => {
    // Arrange
    const t = await createTask(whitelist);
    const kept = await report(t, { app: 'pay', host: 'h1' });
    const dropped = await report(t, { app: 'web' });
    const alarms = await waitHistory(t, 2);
    const hid = alarms.find((x: Any) => x.uuid === kept).history_id;
    // Act
    const byUuid = await api.get<Any>('/alarmtask/alarm', { query: { uid: 2, task_id: t.id, uuid: kept } });
    const byId = await api.get<Any>('/alarmtask/alarm', {
      query: { uid: 1, task_id: t.id, history_id: hid },
    });
    const unstored = await api.get<Any>('/alarmtask/alarm', {
      query: { uid: 1, task_id: t.id, uuid: dropped },
    });
    // Assert
    expect(byUuid.data.alarm).toMatchObject({ uuid: kept, history_id: hid, ctn: { app: 'pay', host: 'h1' } });
    expect(byUuid.data.alarm.expires_at).toBeGreaterThan(byUuid.data.alarm.processed_at + 89 * 86_400);
    expect(byId.data.alarm.uuid).toBe(kept);
    expect(unstored.data.alarm).toMatchObject({ uuid: dropped, stored: false, outcome: 'filtered' });
    const missing = await api.get('/alarmtask/alarm', { query: { uid: 1, task_id: t.id, uuid: 'nope' } });
    expect([missing.status, missing.msg]).toEqual([404, `alarm [nope] of task [${t.id}] not found`]);
    expect((await api.get('/alarmtask/alarm', { query: { uid: 1, task_id: t.id } })).code).toBe(422);
  });

  it('logs the alarms of a task that stores nothing, without their content', async () => {
    const t = await createTask({ flag_save_db: 0 });
    const u = await report(t, { secret: 'kept out' });
    const [entry] = await waitHistory(t, 1);
    expect(entry).toMatchObject({ uuid: u, stored: false, decision: 'not_save_db', outcome: 'notified' });
    expect(entry.ctn).toBeUndefined();
  });
});

describe('PUT /alarmtask/retention', () => {
  it('sets how long processed alarms are kept; 0 returns to the default', async () => {
    const t = await createTask();
    const set = await api.put<Any>('/alarmtask/retention', { ...(await taskAuth(t)), retention_days: 7 });
    expect(set.data).toEqual({ id: t.id, retention_days: 7, default: false });
    // The task cache of the pipeline may hold the old setting for TASK_CACHE_SECONDS (5 s).
    await new Promise((r) => setTimeout(r, 5_500));
    const u = await report(t, { n: 1 });
    await waitHistory(t, 1);
    const one = await api.get<Any>('/alarmtask/alarm', { query: { uid: 1, task_id: t.id, uuid: u } });
    expect(one.data.alarm.expires_at - one.data.alarm.processed_at).toBe(7 * 86_400);
    const reset = await api.put<Any>('/alarmtask/retention', { ...(await taskAuth(t)), retention_days: 0 });
    expect(reset.data).toEqual({ id: t.id, retention_days: 90, default: true });
    const bad = await api.put('/alarmtask/retention', { ...(await taskAuth(t)), retention_days: 5000 });
    expect([bad.status, bad.msg]).toEqual([
      422,
      'retention_days must be 0 (the deployment default) to 3650 days',
    ]);
  });
});

describe('GET /alarmtask/view', () => {
  it("shows a reader the task's configuration without its credentials", async () => {
    // Arrange: a robot with a secret and a webhook URL carrying a token in its query
    const t = await createTask({
      permission: { rw: [], ro: [2] },
      receiver: {
        channels: {
          email: [1],
          webhook: 'http://127.0.0.1:9/hook?token=hush',
          dinggroup: [
            {
              webhook: 'https://oapi.dingtalk.com/robot/send?access_token=abcdef0123456789',
              secret: 'SECtopsecret',
            },
          ],
        },
      },
    });
    // Act
    const res = await api.get<Any>('/alarmtask/view', { query: { uid: 2, task_id: t.id } });
    // Assert
    expect(res.code).toBe(0);
    expect(res.data.task).toMatchObject({ id: t.id, name: t.name });
    const text = JSON.stringify(res.data);
    for (const secret of [t.token, t.secret, 'hush', 'SECtopsecret', 'abcdef0123456789'])
      expect(text).not.toContain(secret);
    expect(text).toContain('http://127.0.0.1:9/hook?…');
    expect((await api.get('/alarmtask/view', { query: { uid: 3, task_id: t.id } })).status).toBe(403);
  });
});

describe('PUT /alarmtask/status', () => {
  it('lets a user with rw permission stop, pause and start a task; read-only is refused', async () => {
    const t = await createTask({ permission: { rw: [2], ro: [3] } });
    const act = (uid: number, action: string, time?: number) =>
      api.put<Any>('/alarmtask/status', { uid, task_id: t.id, action, ...(time ? { time } : {}) });
    expect((await act(2, 'stop')).code).toBe(0);
    expect((await act(2, 'stop')).status).toBe(409);
    const ro = await act(3, 'start');
    expect([ro.status, ro.msg]).toEqual([403, `user [3] has read-only permission on task [${t.id}]`]);
    expect((await act(2, 'pause')).status).toBe(422);
    const before = await serviceNow();
    expect((await act(2, 'pause', 30)).data).toEqual({ id: t.id, time: 30 });
    // The view tells when the pause ends (the console shows it).
    const paused = await api.get<Any>('/alarmtask/view', { query: { uid: 2, task_id: t.id } });
    const after = await serviceNow();
    expect(paused.data.task.status).toBe(2);
    expect(paused.data.task.paused_until).toBeGreaterThanOrEqual(before + 30 * 60);
    expect(paused.data.task.paused_until).toBeLessThanOrEqual(after + 30 * 60);
    expect((await act(2, 'start')).code).toBe(0);
    const view = await api.get<Any>('/alarmtask/view', { query: { uid: 2, task_id: t.id } });
    expect(view.data.task.status).toBe(1);
  });
});

describe('GET /alarmtask/alarms/stats', () => {
  it('counts a task’s alarms per minute by level and outcome', async () => {
    const t = await createTask(whitelist);
    await report(t, { app: 'pay' }, 3);
    await report(t, { app: 'pay' }, 3);
    await report(t, { app: 'web' }, 1);
    await waitHistory(t, 3);
    const now = await serviceNow();
    const res = await api.get<Any>('/alarmtask/alarms/stats', {
      query: { uid: 2, task_id: t.id, from: now - 600, to: now },
    });
    expect(res.code).toBe(0);
    expect(res.data.complete).toBe(true);
    const sum = (f: (m: Any) => number) => res.data.minutes.reduce((n: number, m: Any) => n + f(m), 0);
    expect(sum((m) => m.levels[3])).toBe(2);
    expect(sum((m) => m.levels[1])).toBe(1);
    expect(sum((m) => m.outcomes.notified ?? 0)).toBe(2);
    expect(sum((m) => m.outcomes.filtered ?? 0)).toBe(1);
    expect(res.data.minutes.every((m: Any) => m.minute % 60 === 0)).toBe(true);
    expect(
      (await api.get('/alarmtask/alarms/stats', { query: { uid: 1, task_id: t.id, from: 0, to: 200_000 } }))
        .status,
    ).toBe(422);
    expect((await api.get('/alarmtask/alarms/stats', { query: { uid: 3, task_id: t.id } })).status).toBe(403);
  });
});
