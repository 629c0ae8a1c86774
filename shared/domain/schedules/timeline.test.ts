import { describe, expect, it } from 'vitest';
import type { Layer, Override, ScheduleVersion } from './model.ts';
import { answerAt, changesBetween, coverageGaps, coveragePct, gapsOf, timeline } from './timeline.ts';
import { instantOf, localTime, offsetChanges } from './zone.ts';

const utc = (text: string) => Date.parse(`${text}Z`) / 1000;
const H = 3600;

function version(layers: Layer[], extra: Partial<ScheduleVersion> = {}): ScheduleVersion {
  return {
    version: 1,
    effective_from: 0,
    created_at: 0,
    created_by: 1,
    time_zone: 'Europe/London',
    layers,
    ...extra,
  };
}
const daily = (users: number[], extra: Partial<Layer> = {}): Layer => ({
  name: 'd',
  start: '2026-03-01T09:00',
  turn: { every: 1, unit: 'day' },
  users,
  ...extra,
});
const o = (id: number, start: number, end: number, user: number): Override => ({
  id,
  start,
  end,
  user,
  created_at: 0,
  created_by: 1,
});

describe('zone arithmetic (Intl)', () => {
  it('moves a skipped local time forward by the gap and takes a repeated one at its first occurrence', () => {
    expect(instantOf('America/New_York', 2026, 3, 8, 2, 30)).toBe(utc('2026-03-08T07:30'));
    expect(localTime('America/New_York', utc('2026-03-08T07:30'))).toMatchObject({ hour: 3, minute: 30 });
    expect(instantOf('America/New_York', 2026, 11, 1, 1, 30)).toBe(utc('2026-11-01T05:30'));
    expect(instantOf('Asia/Shanghai', 2026, 3, 8, 2, 30)).toBe(utc('2026-03-07T18:30'));
    expect(offsetChanges('Europe/London', utc('2026-01-01T00:00'), utc('2027-01-01T00:00'))).toEqual([
      { at: utc('2026-03-29T01:00'), before: 0, after: 3600 },
      { at: utc('2026-10-25T01:00'), before: 3600, after: 0 },
    ]);
  });
});

describe('timeline', () => {
  it('hands day turns off at the same local time: a 23-hour shift on the spring change', () => {
    const shifts = timeline([version([daily([1, 2])])], [], utc('2026-03-28T09:00'), utc('2026-03-30T08:00'));
    expect(shifts.map((s) => [s.end - s.start, s.uids])).toEqual([
      [23 * H, [2]],
      [24 * H, [1]],
    ]);
  });

  it('runs hour turns on elapsed time, and covers nothing before the start', () => {
    const layer: Layer = {
      name: 'h',
      start: '2026-03-29T00:00',
      turn: { every: 8, unit: 'hour' },
      users: [1, 2],
    };
    const shifts = timeline([version([layer])], [], utc('2026-03-28T20:00'), utc('2026-03-29T16:00'));
    expect(shifts.map((s) => [s.start, s.end, s.uids, s.source.kind])).toEqual([
      [utc('2026-03-28T20:00'), utc('2026-03-29T00:00'), [], 'none'],
      [utc('2026-03-29T00:00'), utc('2026-03-29T08:00'), [1], 'layer'],
      [utc('2026-03-29T08:00'), utc('2026-03-29T16:00'), [2], 'layer'],
    ]);
  });

  it('clips a layer to its windows (across midnight, to 24:00) while its rotation runs on, the top layer first', () => {
    const night = daily([7], { name: 'night', restrictions: [{ days: [1], from: '22:00', to: '06:00' }] });
    const day = daily([1, 2], { name: 'day', restrictions: [{ days: [1, 2], from: '09:00', to: '24:00' }] });
    const v = version([night, day], { time_zone: 'UTC', fallback: [9] });
    // Monday 2 March 2026
    const shifts = timeline([v], [], utc('2026-03-02T00:00'), utc('2026-03-04T00:00'));
    // Monday: fallback until the day window; the day layer on top of the night window; Tuesday: the
    // night window's end, the fallback, the next day turn.
    expect(shifts.map((s) => [new Date(s.start * 1000).toISOString().slice(5, 16), s.uids])).toEqual([
      ['03-02T00:00', [9]],
      ['03-02T09:00', [2]],
      ['03-03T00:00', [7]],
      ['03-03T06:00', [9]],
      ['03-03T09:00', [1]],
    ]);
  });

  it('puts overrides above everything, the latest created winning where they overlap; merges equal shifts', () => {
    const v = version([daily([1])], { time_zone: 'UTC' });
    const from = utc('2026-03-05T00:00');
    const overrides = [
      o(1, from + 2 * H, from + 6 * H, 5),
      o(2, from + 3 * H, from + 4 * H, 6),
      o(3, from + 5 * H, from + 8 * H, 5),
    ];
    const shifts = timeline([v], overrides, from, from + 10 * H);
    expect(shifts.map((s) => [s.start - from, s.end - from, s.uids[0], s.source.override])).toEqual([
      [0, 2 * H, 1, undefined],
      [2 * H, 3 * H, 5, 1],
      [3 * H, 4 * H, 6, 2],
      [4 * H, 5 * H, 5, 1],
      [5 * H, 8 * H, 5, 3],
      [8 * H, 10 * H, 1, undefined],
    ]);
    expect(coveragePct(shifts, from, from + 10 * H)).toBe(100);
  });

  it('answers each instant with the version in force then; the first version answers for all time before', () => {
    const v1 = version([daily([1])], { time_zone: 'UTC', effective_from: utc('2026-03-10T00:00') });
    const v2 = {
      ...version([daily([2])], { time_zone: 'UTC' }),
      version: 2,
      effective_from: utc('2026-03-12T00:00'),
    };
    const v3 = { ...v2, version: 3, layers: [daily([3])] };
    expect(answerAt([v1, v2, v3], [], utc('2026-03-05T12:00')).uids).toEqual([1]);
    // Two versions of the same instant: the later one.
    expect(answerAt([v1, v2, v3], [], utc('2026-03-12T12:00')).uids).toEqual([3]);
    // The shift reaches beyond the first day looked at: from the layer's start to the next version.
    const a = answerAt([v1, v3], [], utc('2026-03-11T12:00'));
    expect([a.start, a.end, a.uids]).toEqual([utc('2026-03-01T09:00'), utc('2026-03-12T00:00'), [1]]);
  });

  it('reports coverage gaps inside the required windows only, and what an edit changes', () => {
    const v = version(
      [daily([1], { restrictions: [{ days: [1, 2, 3, 4, 5], from: '09:00', to: '17:00' }] })],
      {
        time_zone: 'UTC',
        coverage: {
          horizon_days: 14,
          alarm_task_id: 100001,
          required: [{ days: [1, 2, 3, 4, 5], from: '08:00', to: '18:00' }],
        },
      },
    );
    const from = utc('2026-03-02T00:00');
    const to = utc('2026-03-03T00:00');
    const shifts = timeline([v], [], from, to);
    expect(gapsOf(shifts).length).toBe(2);
    expect(coverageGaps([v], [], from, to)).toEqual([
      { start: utc('2026-03-02T08:00'), end: utc('2026-03-02T09:00'), alarm_task_id: 100001 },
      { start: utc('2026-03-02T17:00'), end: utc('2026-03-02T18:00'), alarm_task_id: 100001 },
    ]);
    const filled = timeline([v], [o(1, utc('2026-03-02T17:00'), utc('2026-03-02T19:00'), 4)], from, to);
    expect(changesBetween(shifts, filled).map((c) => [c.start, c.end, c.before.uids, c.after.uids])).toEqual([
      [utc('2026-03-02T17:00'), utc('2026-03-02T19:00'), [], [4]],
    ]);
  });
});
