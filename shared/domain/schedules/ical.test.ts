import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { renderCalendar } from './ical.ts';
import type { ScheduleVersion } from './model.ts';
import { timeline } from './timeline.ts';

const utc = (text: string) => Date.parse(`${text}Z`) / 1000;

/** Events as a real iCalendar parser reads them: [start, end] in Unix seconds, and their summaries. */
function parsed(text: string) {
  const calendar = new ICAL.Component(ICAL.parse(text));
  for (const tz of calendar.getAllSubcomponents('vtimezone')) ICAL.TimezoneService.register(tz);
  return calendar.getAllSubcomponents('vevent').map((c) => {
    const e = new ICAL.Event(c);
    return { start: e.startDate.toUnixTime(), end: e.endDate.toUnixTime(), summary: e.summary, uid: e.uid };
  });
}

function feed(zone: string, layerStart: string, from: number, to: number) {
  const version: ScheduleVersion = {
    version: 1,
    effective_from: from,
    created_at: from,
    created_by: 1,
    time_zone: zone,
    layers: [
      {
        name: 'night, day',
        start: layerStart,
        turn: { every: 12, unit: 'hour' },
        users: [1, 2],
      },
    ],
  };
  const shifts = timeline([version], [], from, to);
  const text = renderCalendar({
    schedule: { id: 7, name: 'Ops; "primary", ünïcödé' },
    shifts,
    zoneAt: () => zone,
    names: new Map([
      [1, 'Ann Lee'],
      [2, '张三'],
    ]),
    from,
    to,
    now: from,
  });
  return { shifts, text };
}

describe('the calendar feed (RFC 5545)', () => {
  it('gives a parser the final shifts across a spring clock change, times with TZID and a VTIMEZONE', () => {
    // Arrange: 12-hour turns in London over the change of 29 March 2026
    const from = utc('2026-03-25T00:00');
    const to = utc('2026-04-02T00:00');
    // Act
    const { shifts, text } = feed('Europe/London', '2026-03-01T07:00', from, to);
    const events = parsed(text);
    // Assert
    expect(events.map((e) => [e.start, e.end])).toEqual(shifts.map((s) => [s.start, s.end]));
    expect(text).toMatch(/DTSTART;TZID=Europe\/London:20260329T/);
    expect(text).toMatch(
      /BEGIN:DAYLIGHT\r\nDTSTART:20260329T010000\r\nTZOFFSETFROM:\+0000\r\nTZOFFSETTO:\+0100/,
    );
    expect(text.split('\r\n').every((line) => Buffer.byteLength(line) <= 75)).toBe(true);
    expect(events[0].summary).toMatch(/^On call: (Ann Lee|张三)$/);
    expect(new Set(events.map((e) => e.uid)).size).toBe(events.length);
  });

  it('writes the second pass of a repeated local time in UTC, so no event moves by the hour', () => {
    // Arrange: 12-hour turns handing off at 06:30 and 18:30 UTC; New York shows 01:00-02:00 twice on
    // 1 November 2026, and 06:30 UTC is the second 01:30
    const from = utc('2026-10-30T00:00');
    const to = utc('2026-11-03T00:00');
    // Act
    const { shifts, text } = feed('America/New_York', '2026-10-01T02:30', from, to);
    const events = parsed(text);
    // Assert: one hand-off falls on the second 01:30 (06:30 UTC), written as UTC
    expect(shifts.some((s) => s.start === utc('2026-11-01T06:30') || s.end === utc('2026-11-01T06:30'))).toBe(
      true,
    );
    expect(text).toContain('20261101T063000Z');
    expect(events.map((e) => [e.start, e.end])).toEqual(shifts.map((s) => [s.start, s.end]));
  });
});
