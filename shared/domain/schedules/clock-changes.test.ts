import { describe, expect, it } from 'vitest';
import type { Override, ScheduleVersion, Shift } from './model.ts';
import { referenceAnswers } from './test-reference.ts';
import { answerAt, timeline } from './timeline.ts';

/**
 * Every minute of a month holding the clock changes of both sides of the Atlantic, for a schedule of
 * three layers in three zones (an 8-hour Asia/Shanghai layer at the bottom, a weekly America/New_York
 * night layer whose window crosses midnight, a daily Europe/London weekday layer on top), overlapping
 * overrides, a fallback, and an edit half-way through the month: the implementation's answers against
 * the brute-force reference evaluator (test-reference.ts), then `answerAt` (GET /schedule/oncall)
 * against the final shifts sampled each minute.
 */
const utc = (text: string) => Date.parse(`${text}Z`) / 1000;

interface Starts {
  shanghai: string;
  /** A Sunday hand-off time in New York, also the end of its night window. */
  newYork: string;
  london: string;
}

function schedule(
  starts: Starts,
  month: { from: number; to: number },
): {
  versions: ScheduleVersion[];
  overrides: Override[];
} {
  const mid = month.from + 14 * 86_400 + 7 * 3600 + 11 * 60;
  const first: ScheduleVersion = {
    version: 1,
    effective_from: month.from - 40 * 86_400,
    created_at: month.from - 40 * 86_400,
    created_by: 1,
    time_zone: 'Europe/London',
    fallback: [9],
    layers: [
      {
        name: 'shanghai',
        time_zone: 'Asia/Shanghai',
        start: starts.shanghai,
        turn: { every: 8, unit: 'hour' },
        users: [6, 7, 8],
        restrictions: [{ days: [1, 2, 3, 4, 5, 6, 7], from: '00:00', to: '20:00' }],
      },
      {
        name: 'new-york nights',
        time_zone: 'America/New_York',
        start: starts.newYork,
        turn: { every: 1, unit: 'week' },
        users: [4, 5],
        restrictions: [{ days: [1, 2, 3, 4, 5, 6, 7], from: '20:00', to: starts.newYork.slice(11) }],
      },
      {
        name: 'london days',
        start: starts.london,
        turn: { every: 1, unit: 'day' },
        users: [1, 2, 3],
        restrictions: [{ days: [1, 2, 3, 4, 5], from: '09:00', to: '18:00' }],
      },
    ],
  };
  // The edit: no fallback (gaps appear), the New York layer gets a third person, London a 24:00 end.
  const second: ScheduleVersion = {
    ...first,
    version: 2,
    effective_from: mid,
    created_at: mid,
    fallback: undefined,
    layers: [
      first.layers[0],
      { ...first.layers[1], users: [4, 5, 11] },
      { ...first.layers[2], restrictions: [{ days: [1, 2, 3, 4, 5], from: '09:00', to: '24:00' }] },
    ],
  };
  const o = (id: number, start: number, hours: number, user: number): Override => ({
    id,
    start,
    end: start + hours * 3600,
    user,
    created_at: month.from,
    created_by: 1,
  });
  const overrides = [
    o(1, month.from + 2 * 86_400, 30, 20),
    // Created later, inside the first: wins there.
    o(2, month.from + 2 * 86_400 + 5 * 3600, 3, 21),
    // Created earlier than a later one it overlaps at its end.
    o(3, month.from + 20 * 86_400 + 1800, 10, 22),
    o(4, month.from + 20 * 86_400 + 8 * 3600, 6, 23),
  ];
  return { versions: [first, second], overrides };
}

/** The final shifts sampled at each minute. */
function sample(shifts: Shift[], from: number, to: number): Shift[] {
  const out: Shift[] = [];
  let i = 0;
  for (let t = from; t < to; t += 60) {
    while (shifts[i].end <= t) i++;
    out.push(shifts[i]);
  }
  return out;
}

const SPRING: Starts = {
  shanghai: '2026-02-10T01:00',
  newYork: '2026-02-08T02:30',
  london: '2026-02-09T09:00',
};

const answerOf = (s: { uids: number[]; source: Shift['source'] }) => JSON.stringify([s.uids, s.source]);

function checkMonth(starts: Starts, from: number, to: number) {
  const { versions, overrides } = schedule(starts, { from, to });
  const shifts = timeline(versions, overrides, from, to);
  const sampled = sample(shifts, from, to);
  const reference = referenceAnswers(versions, overrides, from, to, from - 40 * 86_400);
  expect(sampled).toHaveLength(reference.length);
  const mismatches: string[] = [];
  sampled.forEach((s, i) => {
    if (answerOf(s) !== answerOf(reference[i]) && mismatches.length < 10)
      mismatches.push(
        `${new Date((from + i * 60) * 1000).toISOString()}: ${answerOf(s)} vs ${answerOf(reference[i])}`,
      );
  });
  expect(mismatches).toEqual([]);
  // Every kind of answer occurs, so the comparison tested each.
  expect(new Set(sampled.map((s) => s.source.kind))).toEqual(
    new Set(['override', 'layer', 'fallback', 'none']),
  );
  expect(new Set(sampled.flatMap((s) => (s.source.layer === undefined ? [] : [s.source.layer])))).toEqual(
    new Set([0, 1, 2]),
  );
  return { versions, overrides, shifts, sampled };
}

describe('who is on call, minute by minute, across clock changes', () => {
  it('spring: March 2026 (New York on the 8th, London on the 29th), 44,640 minutes, no mismatch', () => {
    // 02:30 on Sunday 8 March does not exist in New York: that hand-off and the night window's end
    // move to 03:30 EDT.
    const from = utc('2026-03-01T00:00');
    const to = utc('2026-04-01T00:00');
    const { sampled } = checkMonth(SPRING, from, to);
    expect(sampled).toHaveLength(44_640);
    // The hand-off of 8 March: the night window (ending at the moved 02:30) and the turn both move.
    const ny = timeline(
      schedule(SPRING, { from, to }).versions,
      [],
      utc('2026-03-08T06:00'),
      utc('2026-03-08T09:00'),
    );
    expect(ny.map((s) => [new Date(s.start * 1000).toISOString(), s.source.name])).toEqual([
      ['2026-03-08T06:00:00.000Z', 'new-york nights'],
      ['2026-03-08T07:30:00.000Z', 'shanghai'],
    ]);
  });

  it('autumn: 15 October to 14 November 2026 (London on 25 October, New York on 1 November), no mismatch', () => {
    // 01:30 on Sunday 1 November happens twice in New York: the hand-off is the first (EDT).
    const from = utc('2026-10-15T00:00');
    const to = utc('2026-11-14T00:00');
    const { sampled } = checkMonth(
      { shanghai: '2026-09-20T01:00', newYork: '2026-09-20T01:30', london: '2026-09-21T09:00' },
      from,
      to,
    );
    expect(sampled).toHaveLength(30 * 1440);
  });

  it('GET /schedule/oncall (answerAt) equals the final shifts sampled every minute', () => {
    const from = utc('2026-03-01T00:00');
    const to = utc('2026-04-01T00:00');
    const { versions, overrides, shifts, sampled } = checkMonth(SPRING, from, to);
    let compared = 0;
    sampled.forEach((s, i) => {
      const at = from + i * 60;
      const a = answerAt(versions, overrides, at);
      expect(answerOf(a)).toBe(answerOf(s));
      // The shift is the same span, except where the month's window cut the final one.
      if (s.start > from && s.end < to) expect([a.start, a.end]).toEqual([s.start, s.end]);
      else expect(a.start <= s.start && a.end >= s.end).toBe(true);
      compared++;
    });
    expect(compared).toBe(44_640);
    expect(shifts.length).toBeGreaterThan(100);
  });
});
