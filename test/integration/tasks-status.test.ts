import { describe, expect, it } from 'vitest';
import { queryDue } from '../../shared/domain/due/repository.ts';
import { DUE_SHARDS } from '../../shared/db/keys.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import { advanceClock, api, serviceNow, taskAuth } from '../support/client.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';

const op = async (t: CreatedTask, name: 'stop' | 'start' | 'pause', extra: Record<string, unknown> = {}) =>
  api.put(`/alarmtask/${name}`, { ...(await taskAuth(t)), ...extra });
const statusOf = async (t: CreatedTask) =>
  (await api.get('/alarmtask/show', { query: await taskAuth(t) })).data.task.status;

async function pauseItems(taskId: number) {
  const far = (await serviceNow()) + 10 * 7 * 24 * 3600;
  const all = await Promise.all(Array.from({ length: DUE_SHARDS }, (_, s) => queryDue(s, far, 1000)));
  return all.flat().filter((d) => d.kind === 'task-pause-expiry' && d.ref === String(taskId));
}

describe('stop and start (API guide §5.9)', () => {
  it('stops a running task and refuses to stop it again', async () => {
    const t = await createTask();
    const stop = await op(t, 'stop');
    expect(stop).toMatchObject({ status: 200, code: 0, data: { id: t.id } });
    expect(Object.keys(stop.data)).toEqual(['id']);
    expect(await statusOf(t)).toBe(0);
    const again = await op(t, 'stop');
    expect(again).toMatchObject({ status: 409, code: 409, msg: `task [${t.id}] is already stopped` });
  });

  it('starts a stopped task and refuses to start a running one', async () => {
    const t = await createTask();
    const running = await op(t, 'start');
    expect(running).toMatchObject({ status: 409, code: 409, msg: `task [${t.id}] is already running` });
    await op(t, 'stop');
    const start = await op(t, 'start');
    expect(start).toMatchObject({ code: 0, data: { id: t.id } });
    expect(await statusOf(t)).toBe(1);
    expect((await getTask(t.id))?.status).toBe(1);
  });

  it('lets exactly one of two concurrent stops win', async () => {
    const t = await createTask();
    const [a, b] = await Promise.all([op(t, 'stop'), op(t, 'stop')]);
    expect([a.code, b.code].sort()).toEqual([0, 409]);
  });
});

describe('pause (API guide §5.9)', () => {
  it.each([
    ['0', { time: 0 }],
    ['10081', { time: 10_081 }],
    ['1.5', { time: 1.5 }],
    ['a string', { time: '5' }],
    ['missing', {}],
  ])('refuses time %s with 422', async (_label, extra) => {
    const t = await createTask();
    const res = await op(t, 'pause', extra);
    expect(res).toMatchObject({ status: 422, code: 422 });
    expect(res.msg).toMatch(/^time /);
    expect((await getTask(t.id))?.status).toBe(1);
  });

  it('pauses for the given minutes; start and stop leave a pause', async () => {
    const t = await createTask();
    const now = await serviceNow();
    const res = await op(t, 'pause', { time: 30 });
    expect(res).toMatchObject({ code: 0, data: { id: t.id, time: 30 } });
    expect(await statusOf(t)).toBe(2);
    const stored = await getTask(t.id);
    expect(stored?.status).toBe(2);
    expect(stored?.paused_until).toBeGreaterThanOrEqual(now + 30 * 60);
    expect((await pauseItems(t.id)).map((d) => d.due_at)).toContain(stored?.paused_until);
    expect((await op(t, 'start')).code).toBe(0);
    expect(await statusOf(t)).toBe(1);
    expect((await getTask(t.id))?.paused_until).toBeUndefined();
    expect((await op(t, 'pause', { time: 10_080 })).code).toBe(0);
    expect((await op(t, 'stop')).code).toBe(0);
    expect(await statusOf(t)).toBe(0);
  });

  it('pauses a stopped task too', async () => {
    const t = await createTask();
    await op(t, 'stop');
    expect((await op(t, 'pause', { time: 5 })).code).toBe(0);
    expect(await statusOf(t)).toBe(2);
  });

  it('runs again by itself when the pause ends; a later pause is not cut short by an earlier expiry', async () => {
    // Arrange: a paused for 1 minute; b paused for 1 minute, then re-paused for 2.
    const a = await createTask();
    const b = await createTask();
    expect((await op(a, 'pause', { time: 1 })).code).toBe(0);
    expect((await op(b, 'pause', { time: 1 })).code).toBe(0);
    expect((await op(b, 'pause', { time: 2 })).code).toBe(0);
    const bPausedUntil = (await getTask(b.id))?.paused_until;
    // Act: pass the first expiry.
    await advanceClock(65);
    // Assert: a runs (read and persisted by the due work), b is still paused.
    expect(await statusOf(a)).toBe(1);
    const storedA = await getTask(a.id, true);
    expect(storedA?.status).toBe(1);
    expect(storedA?.paused_until).toBeUndefined();
    expect(await statusOf(b)).toBe(2);
    expect((await getTask(b.id, true))?.paused_until).toBe(bPausedUntil);
    expect(await pauseItems(a.id)).toEqual([]);
    // Act: pass b's pause.
    await advanceClock(60);
    expect(await statusOf(b)).toBe(1);
    expect((await getTask(b.id, true))?.status).toBe(1);
    // The persisted status is what start sees: the task is running.
    expect((await op(a, 'start')).msg).toBe(`task [${a.id}] is already running`);
  });
});
