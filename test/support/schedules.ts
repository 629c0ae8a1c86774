import { api } from './client.ts';

/** On-call schedules in tests, through the real routes (as the test app acting as user 1, role 9). */

// biome-ignore lint/suspicious/noExplicitAny: a request body under construction
export type ScheduleBody = Record<string, any>;

export const DAY = 86_400;

/** `YYYY-MM-DDTHH:MM` of an instant in UTC (a layer start in a schedule of zone UTC). */
export const utcLocal = (t: number) => new Date(t * 1000).toISOString().slice(0, 16);

/** A valid store body: zone UTC, one daily layer of users 2 and 3 from 2026-01-01; overrides merged shallowly. */
export function scheduleBody(overrides: ScheduleBody = {}): ScheduleBody {
  return {
    uid: 1,
    name: `schedule-${Math.random().toString(36).slice(2, 10)}`,
    department_id: 1,
    time_zone: 'UTC',
    layers: [{ name: 'primary', start: '2026-01-01T09:00', turn: { every: 1, unit: 'day' }, users: [2, 3] }],
    ...overrides,
  };
}

export async function createSchedule(
  overrides: ScheduleBody = {},
): Promise<{ id: number; body: ScheduleBody }> {
  const body = scheduleBody(overrides);
  const res = await api.post('/schedule/store', body);
  if (res.code !== 0) throw new Error(`createSchedule failed: ${res.status} ${res.code} ${res.msg}`);
  return { id: res.data.schedule.id as number, body };
}

// biome-ignore lint/suspicious/noExplicitAny: the answer under test
export async function finalOf(id: number, from: number, to: number): Promise<any> {
  const res = await api.get('/schedule/final', { query: { uid: 1, id, from, to } });
  if (res.code !== 0) throw new Error(`final failed: ${res.status} ${res.msg}`);
  return res.data;
}

// biome-ignore lint/suspicious/noExplicitAny: the answer under test
export async function oncallOf(id: number, at?: number): Promise<any> {
  const res = await api.get('/schedule/oncall', {
    query: { uid: 1, id, ...(at === undefined ? {} : { at }) },
  });
  if (res.code !== 0) throw new Error(`oncall failed: ${res.status} ${res.msg}`);
  return res.data;
}
