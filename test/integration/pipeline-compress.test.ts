import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlarmRecord } from '../../shared/domain/alarms/model.ts';
import { getAlarmRecord, getMetricState } from '../../shared/domain/alarms/repository.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { advanceClock, call, serviceNow } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask, type TaskBody } from '../support/tasks.ts';

/**
 * Compression windows, delay flushes and delay recovery on the real local stack (API guide §9.2, §9.4).
 * Alarms are reported one at a time (each processed before the next) so positions in a window are
 * deterministic; the test clock crosses windows. Windows are long (10 h) so that another suite moving
 * the shared clock by minutes cannot end one early.
 */
const receiver = new TestReceiver();
const CYCLE = 600; // minutes

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

async function compressTask(
  compress: Record<string, unknown>,
  overrides: TaskBody = {},
): Promise<CreatedTask> {
  return createTask({
    receiver: { channels: { email: [1], webhook: receiver.url } },
    compress: { enable: true, method: 4, strategy_cycle: CYCLE, not_match: 1, ...compress },
    ...overrides,
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const recordOf = (t: { id: number }, uuid: string) =>
  until<AlarmRecord>(`record ${uuid}`, () => getAlarmRecord(t.id, uuid));

/** Reports an alarm and waits until the pipeline recorded it. */
async function alarm(t: CreatedTask, ctn: Record<string, unknown>): Promise<AlarmRecord> {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn },
  });
  if (res.code !== 0) throw new Error(`report refused: ${res.code} ${res.msg}`);
  return recordOf(t, res.data.uuid as string);
}

async function alarms(t: CreatedTask, n: number): Promise<AlarmRecord[]> {
  const out: AlarmRecord[] = [];
  for (let i = 0; i < n; i++) out.push(await alarm(t, { n: i }));
  return out;
}

/** The task's events of a kind, once each (delivery is at least once: a copy has the same webhook-id). */
const eventsOf = (t: { id: number }, event: string): Received[] => {
  const seen = new Set<string>();
  return receiver.received.filter((r) => {
    const id = String(r.headers['webhook-id']);
    if (r.json?.data?.task?.id !== t.id || r.json.event !== event || seen.has(id)) return false;
    seen.add(id);
    return true;
  });
};

async function waitEvents(t: { id: number }, event: string, count: number): Promise<Received[]> {
  await receiver.waitFor(() => eventsOf(t, event).length >= count);
  return eventsOf(t, event);
}

/** Lets in-flight side effects land before asserting that nothing more arrived. */
const settle = () => new Promise((r) => setTimeout(r, 400));

const notifiedUuids = (t: { id: number }) =>
  eventsOf(t, 'ALARM').map((e) => e.json.data.history.uuid as string);

/** Moves the service clock past a window (and runs due work). */
const pastWindow = () => advanceClock(CYCLE * 60 + 1);

describe('compression strategies over a window (API guide §9.4)', () => {
  it('1 cycle: the first alarm of each window is notified; all are stored with metric and batch', async () => {
    const t = await compressTask({ strategy: 1 });
    const first = await alarms(t, 3);
    await pastWindow();
    const [next] = await alarms(t, 1);
    const events = await waitEvents(t, 'ALARM', 2);
    await settle();
    expect(notifiedUuids(t)).toEqual([first[0].uuid, next.uuid]);
    expect(first.map((r) => [r.k, r.notify])).toEqual([
      [1, 'now'],
      [2, 'none'],
      [3, 'none'],
    ]);
    const { metric, batch } = first[0].history;
    expect(metric).toMatch(/^[0-9a-f]{40}$/);
    expect(batch).toBe(first[0].history.id);
    expect(first.every((r) => r.history.metric === metric && r.history.batch === batch)).toBe(true);
    expect(next.history).toMatchObject({ metric, batch: next.history.id });
    expect(events[0].json).toMatchObject({
      event: 'ALARM',
      type: 'compressed',
      data: { task: { id: t.id, name: t.name }, history: { uuid: first[0].uuid, batch, metric } },
    });
  });

  it('2 delay: nothing inline; when the window ends its first alarm is notified once (with its workflow)', async () => {
    const t = await compressTask({ strategy: 2 }, { workflow: { enable: true } });
    const records = await alarms(t, 3);
    expect(records.map((r) => r.notify)).toEqual(['deferred', 'none', 'none']);
    await settle();
    expect(eventsOf(t, 'ALARM')).toEqual([]);
    await pastWindow();
    const [ev] = await waitEvents(t, 'ALARM', 1);
    expect(ev.json).toMatchObject({ type: 'compressed', data: { history: { uuid: records[0].uuid } } });
    const [wf] = await waitEvents(t, 'WORKFLOW', 1);
    expect(wf.json).toMatchObject({ type: 'generated', data: { history: { uuid: records[0].uuid } } });
    await pastWindow();
    await settle();
    expect(eventsOf(t, 'ALARM')).toHaveLength(1);
    expect(eventsOf(t, 'WORKFLOW')).toHaveLength(1);
  });

  it('3 cycle-count: k = 1 and k = N are notified, then the next alarm opens a new window', async () => {
    const t = await compressTask({ strategy: 3, strategy_count: 3 });
    const r = await alarms(t, 4);
    await waitEvents(t, 'ALARM', 3);
    await settle();
    expect(notifiedUuids(t)).toEqual([r[0].uuid, r[2].uuid, r[3].uuid]);
    expect(r.map((x) => x.k)).toEqual([1, 2, 3, 1]);
    expect(r.map((x) => x.history.batch)).toEqual([
      r[0].history.id,
      r[0].history.id,
      r[0].history.id,
      r[3].history.id,
    ]);
  });

  it('4 count-cycle: the N-th alarm is notified and starts a new window', async () => {
    const t = await compressTask({ strategy: 4, strategy_count: 2 });
    const r = await alarms(t, 5);
    await waitEvents(t, 'ALARM', 2);
    await settle();
    expect(notifiedUuids(t)).toEqual([r[1].uuid, r[3].uuid]);
    expect(r.map((x) => x.k)).toEqual([1, 2, 1, 2, 1]);
    expect(new Set(r.map((x) => x.history.batch)).size).toBe(3);
  });

  it('4 count-cycle: a window that ends before N notifies nothing', async () => {
    const t = await compressTask({ strategy: 4, strategy_count: 3 });
    const early = await alarms(t, 2);
    await pastWindow();
    const late = await alarms(t, 2);
    await settle();
    expect(eventsOf(t, 'ALARM')).toEqual([]);
    expect([...early, ...late].map((x) => x.k)).toEqual([1, 2, 1, 2]);
  });

  it('5 count: only k = N is notified within the window', async () => {
    const t = await compressTask({ strategy: 5, strategy_count: 2 });
    const r = await alarms(t, 4);
    await waitEvents(t, 'ALARM', 1);
    await settle();
    expect(notifiedUuids(t)).toEqual([r[1].uuid]);
    expect(new Set(r.map((x) => x.history.batch))).toEqual(new Set([r[0].history.id]));
    const state = await getMetricState(t.id, r[0].history.metric);
    expect(state?.window).toMatchObject({ k: 4, opener: r[0].uuid, batch: r[0].history.id });
  });
});

describe('compression methods', () => {
  const conditions = [
    {
      rule: [
        { field: 'ctn.app', operator: 'eq', threshold: 'pay' },
        { field: 'ctn.host', operator: 'eq-self' },
      ],
    },
  ];

  it('condition method: eq-self groups by the actual value; no match is sent as compress_not_match', async () => {
    const t = await compressTask({ method: 1, strategy: 1, conditions });
    const a1 = await alarm(t, { app: 'pay', host: 'h1', n: 1 });
    const a2 = await alarm(t, { app: 'pay', host: 'h1', n: 2 });
    const b = await alarm(t, { app: 'pay', host: 'h2' });
    const other = await alarm(t, { app: 'web', host: 'h1' });
    await waitEvents(t, 'ALARM', 3);
    await settle();
    expect(a1.history.metric).toBe(a2.history.metric);
    expect(b.history.metric).toMatch(/^[0-9a-f]{40}$/);
    expect(b.history.metric).not.toBe(a1.history.metric);
    expect(other).toMatchObject({ outcome: 'compress_not_match', history: { metric: '', batch: 0 } });
    expect(eventsOf(t, 'ALARM').map((e) => [e.json.type, e.json.data.history.uuid])).toEqual([
      ['compressed', a1.uuid],
      ['compressed', b.uuid],
      ['compress_not_match', other.uuid],
    ]);
  });

  it('condition method with not_match 0: an unmatched alarm is stored only', async () => {
    const t = await compressTask({ method: 1, strategy: 1, conditions, not_match: 0 });
    const other = await alarm(t, { app: 'web' });
    const matched = await alarm(t, { app: 'pay', host: 'h' });
    await waitEvents(t, 'ALARM', 1);
    await settle();
    expect(other).toMatchObject({ outcome: 'not_match_stored', notify: 'none' });
    expect(notifiedUuids(t)).toEqual([matched.uuid]);
  });

  it('content method: equal contents (keys in any order) share a metric', async () => {
    const t = await compressTask({ method: 3, strategy: 1 });
    const a = await alarm(t, { b: 1, a: { y: 2, x: 1 } });
    const b = await alarm(t, { a: { x: 1, y: 2 }, b: 1 });
    const c = await alarm(t, { a: { x: 1, y: 3 }, b: 1 });
    expect(a.history.metric).toBe(b.history.metric);
    expect(c.history.metric).not.toBe(a.history.metric);
    await waitEvents(t, 'ALARM', 2);
    await settle();
    expect(notifiedUuids(t)).toEqual([a.uuid, c.uuid]);
  });

  it('a workflow is created only for compressed alarms that are notified', async () => {
    const t = await compressTask({ strategy: 1 }, { workflow: { enable: true } });
    const r = await alarms(t, 3);
    const [wf] = await waitEvents(t, 'WORKFLOW', 1);
    await waitEvents(t, 'ALARM', 1);
    await settle();
    expect(eventsOf(t, 'WORKFLOW')).toHaveLength(1);
    expect(wf.json).toMatchObject({
      type: 'generated',
      data: { history: { uuid: r[0].uuid, metric: r[0].history.metric }, workflow: { status: 0 } },
    });
  });
});

describe('recovery, delay mode (API guide §9.2)', () => {
  it('recovers the last alarm of a metric once no alarm came for delay_interval minutes', async () => {
    const t = await compressTask(
      { strategy: 1 },
      { recovery: { enable: true, mode: 2, delay_interval: 120 } },
    );
    const first = await alarm(t, { n: 1 });
    await advanceClock(60 * 60);
    const last = await alarm(t, { n: 2 });
    // The check armed by the first alarm runs at +120 min, finds the later alarm and re-arms.
    await advanceClock(100 * 60);
    await settle();
    expect(eventsOf(t, 'RECOVERY')).toEqual([]);
    const state = await getMetricState(t.id, first.history.metric);
    expect(state).toMatchObject({ recovery_pending: true, last_uuid: last.uuid });
    // 121 minutes after the last alarm.
    await advanceClock(21 * 60);
    const [ev] = await waitEvents(t, 'RECOVERY', 1);
    expect(ev.headers['webhook-id']).toBe(`${t.id}:${last.uuid}:RECOVERY`);
    expect(ev.json).toMatchObject({
      event: 'RECOVERY',
      type: 'recovery',
      data: { task: { id: t.id }, history: { uuid: last.uuid, metric: first.history.metric } },
    });
    expect(await getMetricState(t.id, first.history.metric)).toMatchObject({ recovery_pending: false });
    await advanceClock(CYCLE * 60);
    await settle();
    expect(eventsOf(t, 'RECOVERY')).toHaveLength(1);
  });

  it('needs compression: without it nothing recovers', async () => {
    const t = await createTask({
      receiver: { channels: { email: [1], webhook: receiver.url } },
      recovery: { enable: true, mode: 2, delay_interval: 1 },
    });
    const r = await alarm(t, { n: 1 });
    expect(r.outcome).toBe('compress_disable');
    await advanceClock(3 * 60);
    await waitEvents(t, 'ALARM', 1);
    await settle();
    expect(eventsOf(t, 'RECOVERY')).toEqual([]);
  });
});
