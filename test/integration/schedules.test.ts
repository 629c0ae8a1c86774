import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { api, baseUrl, call, serviceNow, taskAuth } from '../support/client.ts';
import { createSchedule, DAY, finalOf, oncallOf, scheduleBody, utcLocal } from '../support/schedules.ts';
import { createTask } from '../support/tasks.ts';

/**
 * The schedule routes on the local stack (API guide §18): changes and permissions, answers about the
 * past that no edit changes, the preview against the saved result, overrides, the reference index that
 * keeps a named schedule from being deleted, and the calendar feed read by a real iCalendar parser.
 * Times are taken from the service clock (other suites move it).
 */

describe('schedules: store, show, list, permissions', () => {
  it('stores a schedule, shows it to its readers only, and refuses bad configurations with the field', async () => {
    // Arrange / Act
    const s = await createSchedule({ permission: { ro: [4] } });
    const shown = await api.get('/schedule/show', { query: { uid: 4, id: s.id } });
    const stranger = await api.get('/schedule/show', { query: { uid: 5, id: s.id } });
    const readOnly = await api.put('/schedule/update', { ...s.body, uid: 4, id: s.id });
    const listed = await api.get('/schedule/list', { query: { uid: 4, limit: 100 } });
    // Assert
    expect(shown.code).toBe(0);
    expect(shown.data.schedule).toMatchObject({
      id: s.id,
      name: s.body.name,
      time_zone: 'UTC',
      version: 1,
      layers: s.body.layers,
      tasks: 0,
      ical: false,
      permission: { rw: [{ uid: 1 }], ro: [{ uid: 4 }] },
    });
    expect([stranger.status, stranger.msg]).toEqual([
      403,
      `user [5] has no permission on schedule [${s.id}]`,
    ]);
    expect([readOnly.status, readOnly.msg]).toEqual([
      403,
      `user [4] has read-only permission on schedule [${s.id}]`,
    ]);
    expect(listed.data.schedules).toContainEqual(expect.objectContaining({ id: s.id, access: 'ro' }));
    const bad = await api.post(
      '/schedule/store',
      scheduleBody({
        time_zone: 'Mars/Olympus',
        layers: [{ name: 'x', start: '2026-02-30T09:00', turn: { every: 1, unit: 'day' }, users: [2] }],
      }),
    );
    expect([bad.status, bad.code]).toEqual([422, 422]);
    expect(bad.data.errors).toEqual([
      { field: 'time_zone', message: 'must be an IANA time zone (e.g. Europe/London)' },
      { field: 'layers.0.start', message: 'must be a real date and time' },
    ]);
    const unknown = await api.post('/schedule/store', scheduleBody({ fallback: [999_999] }));
    expect([unknown.status, unknown.msg]).toEqual([404, 'user [999999] not found']);
    const window = await api.get('/schedule/final', { query: { uid: 1, id: s.id, from: 0, to: 91 * DAY } });
    expect([window.status, window.msg]).toEqual([422, 'to must be at most 90 days after from']);
  });
});

describe('edits never rewrite the past', () => {
  it('leaves every answer about earlier instants identical, and preview equals final after saving', async () => {
    // Arrange: a daily rotation, and what it answers for the last and the next five days
    const now = await serviceNow();
    const s = await createSchedule();
    const from = now - 5 * DAY;
    const to = now + 10 * DAY;
    const before = await finalOf(s.id, from, to);
    const pastInstants = [from + 600, now - 3 * DAY, now - DAY - 7, now - 60];
    const asked = () => Promise.all(pastInstants.map((t) => oncallOf(s.id, t)));
    const pastAnswers = await asked();
    // Who and why at each instant, and its shift as far as it lies before the edit (where it ends
    // after the edit, the edit may end it sooner: that end is not the past).
    const pastOnly = (answers: { shift: { start: number; end: number } }[], edit: number) =>
      answers.map((a) => ({ ...a, shift: { start: a.shift.start, end: Math.min(a.shift.end, edit) } }));
    // Act: an edit from now (other people), then a preview of one taking effect in two days
    const edited = { ...s.body, id: s.id, layers: [{ ...s.body.layers[0], users: [4, 5] }] };
    const saved = await api.put('/schedule/update', edited);
    const after = await finalOf(s.id, from, to);
    const effective = now + 2 * DAY + 1800;
    const next = { ...edited, effective_from: effective, layers: [{ ...edited.layers[0], users: [6] }] };
    const preview = await api.post('/schedule/preview', { ...next, from, to });
    const saveNext = await api.put('/schedule/update', next);
    const final = await finalOf(s.id, from, to);
    // Assert: the past is what it was, every instant of it
    expect(saved.code).toBe(0);
    expect(saved.data.schedule.version).toBe(2);
    const edit = saved.data.schedule.versions[1].effective_from as number;
    const cut = (shifts: { start: number; end: number }[], until: number) =>
      shifts.filter((x) => x.start < until).map((x) => ({ ...x, end: Math.min(x.end, until) }));
    expect(cut(after.shifts, edit)).toEqual(cut(before.shifts, edit));
    expect(pastOnly(await asked(), edit)).toEqual(pastOnly(pastAnswers, edit));
    // ... and the future changed: someone of the new layer is on call after the edit
    expect(
      after.shifts
        .filter((x: { start: number }) => x.start >= edit)
        .flatMap((x: { uids: number[] }) => x.uids),
    ).toEqual(expect.arrayContaining([4]));
    // The preview was the final of the saved configuration, and named what changes (from its start)
    expect(preview.code).toBe(0);
    expect(saveNext.code).toBe(0);
    expect({
      shifts: preview.data.shifts,
      gaps: preview.data.gaps,
      coverage_pct: preview.data.coverage_pct,
    }).toEqual({
      shifts: final.shifts,
      gaps: final.gaps,
      coverage_pct: final.coverage_pct,
    });
    expect(preview.data.effective_from).toBe(effective);
    expect(preview.data.changes.length).toBeGreaterThan(0);
    expect(preview.data.changes[0].start).toBe(effective);
    expect(preview.data.changes.every((c: { after: { uids: number[] } }) => c.after.uids[0] === 6)).toBe(
      true,
    );
    // A later edit due earlier replaces the pending one (the version due in two days is gone)
    const sooner = await api.put('/schedule/update', { ...edited, effective_from: now + DAY });
    expect(sooner.data.schedule.versions.map((v: { version: number }) => v.version)).toEqual([1, 2, 4]);
    expect(pastOnly(await asked(), edit)).toEqual(pastOnly(pastAnswers, edit));
    // An edit cannot take effect in the past
    const late = await api.put('/schedule/update', { ...edited, effective_from: now - 60 });
    expect([late.status, late.msg]).toEqual([422, 'effective_from must not be in the past']);
  });
});

describe('overrides', () => {
  it('puts a person above every layer, the latest created winning; deleting ends a started one now', async () => {
    // Arrange
    const now = await serviceNow();
    const s = await createSchedule({ fallback: [6] });
    const start = now + 2 * DAY;
    // Act
    const first = await api.post('/schedule/override', {
      uid: 1,
      id: s.id,
      start,
      end: start + 6 * 3600,
      user: 4,
    });
    const second = await api.post('/schedule/override', {
      uid: 1,
      id: s.id,
      start: start + 3600,
      end: start + 2 * 3600,
      user: 5,
    });
    const running = await api.post('/schedule/override', {
      uid: 1,
      id: s.id,
      start: now - 3600,
      end: now + 600,
      user: 6,
    });
    // Assert
    expect(first.data.override).toMatchObject({ start, user: 4 });
    expect(second.data.override.id).toBeGreaterThan(first.data.override.id);
    // An override cannot change the past: it starts now
    expect(running.data.override.start).toBeGreaterThanOrEqual(now);
    const at = (t: number) => oncallOf(s.id, t);
    expect((await at(start + 1800)).users.map((u: { uid: number }) => u.uid)).toEqual([4]);
    const inner = await at(start + 3600 + 60);
    expect(inner.users.map((u: { uid: number }) => u.uid)).toEqual([5]);
    expect(inner.source).toEqual({ kind: 'override', override: second.data.override.id });
    expect(inner.shift).toEqual({ start: start + 3600, end: start + 2 * 3600 });
    expect((await at(start + 3 * 3600)).users.map((u: { uid: number }) => u.uid)).toEqual([4]);
    // Not started: removed. Started: ends now, what it answered stays.
    const removed = await call('DELETE', '/schedule/override', {
      form: { uid: 1, id: s.id, override_id: second.data.override.id },
    });
    expect(removed.data).toMatchObject({ result: 'deleted', end: start + 2 * 3600 });
    expect((await at(start + 3600 + 60)).users.map((u: { uid: number }) => u.uid)).toEqual([4]);
    await new Promise((r) => setTimeout(r, 1_100));
    const ended = await call('DELETE', '/schedule/override', {
      query: { uid: 1, id: s.id, override_id: running.data.override.id },
    });
    expect(ended.data.result).toBe('ended');
    expect(ended.data.end).toBeGreaterThan(running.data.override.start);
    expect((await at(running.data.override.start)).users.map((u: { uid: number }) => u.uid)).toEqual([6]);
    expect((await at(running.data.override.start)).source.kind).toBe('override');
    const gone = await call('DELETE', '/schedule/override', {
      form: { uid: 1, id: s.id, override_id: running.data.override.id },
    });
    expect(gone.status).toBe(404);
    const past = await api.post('/schedule/override', {
      uid: 1,
      id: s.id,
      start: now - 7200,
      end: now - 3600,
      user: 4,
    });
    expect([past.status, past.msg]).toEqual([
      422,
      'end must be in the future (an override cannot change the past)',
    ]);
  });
});

describe('the reference index', () => {
  it('refuses to delete a schedule a task names (409 naming the task) until no task does', async () => {
    // Arrange: a task names s1 through store; update moves it to s2; updatefields adds s1 back
    const s1 = await createSchedule();
    const s2 = await createSchedule();
    const task = await createTask({ receiver: { oncall: [{ schedule_id: s1.id, channels: ['email'] }] } });
    const tasksOf = async (id: number) =>
      (await api.get('/schedule/show', { query: { uid: 1, id } })).data.schedule.tasks as number;
    // Act / Assert
    expect(await tasksOf(s1.id)).toBe(1);
    const refused = await call('DELETE', '/schedule', { form: { uid: 1, id: s1.id } });
    expect([refused.status, refused.msg]).toEqual([
      409,
      `schedule [${s1.id}] is named by task [${task.id}]: remove it from their receivers first`,
    ]);
    const moved = await api.put('/alarmtask/update', {
      ...(await taskAuth(task)),
      ...task.body,
      receiver: { oncall: [{ schedule_id: s2.id, channels: ['sms', 'email'] }] },
    });
    expect(moved.code).toBe(0);
    expect([await tasksOf(s1.id), await tasksOf(s2.id)]).toEqual([0, 1]);
    const both = await api.put('/alarmtask/updatefields', {
      ...(await taskAuth(task)),
      filter_fields: ['receiver.oncall'],
      receiver: { oncall: [{ schedule_id: s1.id, channels: ['email'] }] },
    });
    expect(both.code).toBe(0);
    expect([await tasksOf(s1.id), await tasksOf(s2.id)]).toEqual([1, 0]);
    const shown = await api.get('/alarmtask/show', { query: await taskAuth(task) });
    expect(shown.data.task.receiver.oncall).toEqual([{ schedule_id: s1.id, channels: ['email'] }]);
    const unknown = await api.put('/alarmtask/updatefields', {
      ...(await taskAuth(task)),
      filter_fields: ['receiver.oncall'],
      receiver: { oncall: [{ schedule_id: 999_999, channels: ['email'] }] },
    });
    expect([unknown.status, unknown.msg]).toEqual([404, 'schedule [999999] not found']);
    // s2 is named by nobody now: deleted, with everything in it
    const deleted = await call('DELETE', '/schedule', { form: { uid: 1, id: s2.id } });
    expect(deleted.data).toEqual({ id: s2.id });
    expect((await api.get('/schedule/show', { query: { uid: 1, id: s2.id } })).status).toBe(404);
    // Deleting the task drops its reference: s1 can go
    await call('DELETE', '/alarmtask', { form: await taskAuth(task) });
    expect(await tasksOf(s1.id)).toBe(0);
    expect((await call('DELETE', '/schedule', { query: { uid: 1, id: s1.id } })).code).toBe(0);
  });
});

describe('the calendar feed', () => {
  it('is valid RFC 5545 a real parser reads, with stable UIDs and TZID times, and its events are the final shifts', async () => {
    // Arrange: weekday office hours in London (the window holds a clock change or not, as the date falls)
    const s = await createSchedule({
      time_zone: 'Europe/London',
      layers: [
        {
          name: 'office',
          start: '2026-01-05T09:00',
          turn: { every: 1, unit: 'day' },
          users: [2, 3, 4],
          restrictions: [{ days: [1, 2, 3, 4, 5], from: '09:00', to: '17:30' }],
        },
      ],
    });
    const issued = await api.put('/schedule/ical', { uid: 1, id: s.id });
    const fetchFeed = (key: string) => fetch(`${baseUrl()}/schedule/ical.ics?id=${s.id}&key=${key}`);
    // Act
    const res = await fetchFeed(issued.data.key);
    const text = await res.text();
    const again = await (await fetchFeed(issued.data.key)).text();
    // Assert
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/calendar; charset=utf-8');
    expect(issued.data.feed).toBe(`/schedule/ical.ics?id=${s.id}&key=${issued.data.key}`);
    expect(text).toContain('DTSTART;TZID=Europe/London:');
    const calendar = new ICAL.Component(ICAL.parse(text));
    for (const tz of calendar.getAllSubcomponents('vtimezone')) ICAL.TimezoneService.register(tz);
    const events = calendar.getAllSubcomponents('vevent').map((e) => new ICAL.Event(e));
    const now = await serviceNow();
    const from = Math.floor(now / DAY) * DAY;
    const final = await finalOf(s.id, from, from + 90 * DAY);
    const shifts = final.shifts.filter((x: { uids: number[] }) => x.uids.length > 0);
    expect(events.length).toBe(shifts.length);
    expect(events.length).toBeGreaterThan(50);
    expect(events.map((e) => [e.startDate.toUnixTime(), e.endDate.toUnixTime()])).toEqual(
      shifts.map((x: { start: number; end: number }) => [x.start, x.end]),
    );
    expect(events.map((e) => e.summary)).toContain('On call: 张三');
    const uids = (t: string) => [...t.matchAll(/^UID:(.*)$/gm)].map((m) => m[1].trim());
    expect(new Set(uids(text)).size).toBe(events.length);
    expect(uids(again)).toEqual(uids(text));
    // The key is the only credential: a wrong one, or a revoked one, is refused
    expect((await fetchFeed('0'.repeat(40))).status).toBe(401);
    const secret = await api.get('/schedule/show', { query: { uid: 1, id: s.id } });
    expect(JSON.stringify(secret.data)).not.toContain(issued.data.key);
    expect(secret.data.schedule.ical).toBe(true);
    await api.put('/schedule/ical', { uid: 1, id: s.id, revoke: true });
    const revoked = await fetchFeed(issued.data.key);
    expect([revoked.status, ((await revoked.json()) as { msg: string }).msg]).toEqual([
      401,
      'calendar key invalid',
    ]);
    expect(utcLocal(0)).toBe('1970-01-01T00:00');
  });
});
