/**
 * The calendar feed of a schedule (RFC 5545): one event per final shift with someone on call, times
 * in the schedule's zone (TZID, with a VTIMEZONE of its offset changes over the feed's window). Pure.
 *
 * An event's UID is made of the schedule, the shift's start and its people, so it stays the same
 * from one fetch to the next while the shift does. A time that the zone shows twice (the hour
 * repeated when clocks go back) and that is its second occurrence is written in UTC instead, since a
 * local time with TZID names the first occurrence.
 */
import { type Shift, sourceText } from './model.ts';
import { instantOf, localTime, offsetChanges, offsetAt } from './zone.ts';

export interface CalendarInput {
  schedule: { id: number; name: string };
  shifts: Shift[];
  /** The zone shown for a shift starting at an instant (the configuration in force then). */
  zoneAt: (t: number) => string;
  /** Display names of the people on call. */
  names: Map<number, string>;
  from: number;
  to: number;
  /** DTSTAMP: when the feed was made. */
  now: number;
}

const two = (n: number) => String(n).padStart(2, '0');

function utcText(t: number): string {
  return new Date(t * 1000)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function localText(zone: string, t: number): string {
  const l = localTime(zone, t);
  return `${l.year}${two(l.month)}${two(l.day)}T${two(l.hour)}${two(l.minute)}${two(l.second)}`;
}

/** `DTSTART;TZID=Zone:local`, or `DTSTART:...Z` for the second pass of a repeated local time. */
function dateTime(name: string, zone: string, t: number): string {
  const l = localTime(zone, t);
  const back = instantOf(zone, l.year, l.month, l.day, l.hour, l.minute) + l.second;
  return back === t ? `${name};TZID=${zone}:${localText(zone, t)}` : `${name}:${utcText(t)}`;
}

function offsetText(seconds: number): string {
  const sign = seconds < 0 ? '-' : '+';
  const a = Math.abs(seconds);
  const s = a % 60;
  return `${sign}${two(Math.floor(a / 3600))}${two(Math.floor((a % 3600) / 60))}${s ? two(s) : ''}`;
}

/** TEXT values: backslash, semicolon, comma and newlines escaped (RFC 5545 §3.3.11). */
function text(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/;/g, '\\;').replace(/,/g, '\\,').replace(/\r?\n/g, '\\n');
}

/** Lines folded at 75 octets (RFC 5545 §3.1), never inside a UTF-8 character. */
function fold(line: string): string {
  const out: string[] = [];
  let current = '';
  let bytes = 0;
  for (const ch of line) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > (out.length === 0 ? 75 : 74)) {
      out.push(current);
      current = '';
      bytes = 0;
    }
    current += ch;
    bytes += n;
  }
  out.push(current);
  return out.join('\r\n ');
}

/** A zone's VTIMEZONE over [from, to): the observance at `from`, then each change. */
function vtimezone(zone: string, from: number, to: number): string[] {
  const first = offsetAt(zone, from);
  const lines = ['BEGIN:VTIMEZONE', `TZID:${zone}`];
  const observance = (kind: string, at: number, before: number, after: number) => [
    `BEGIN:${kind}`,
    // The onset in the local time of the offset before it (RFC 5545 §3.6.5).
    `DTSTART:${utcText(at + before).slice(0, 15)}`,
    `TZOFFSETFROM:${offsetText(before)}`,
    `TZOFFSETTO:${offsetText(after)}`,
    `END:${kind}`,
  ];
  lines.push(...observance('STANDARD', from - 86_400, first, first));
  for (const c of offsetChanges(zone, from, to)) {
    lines.push(...observance(c.after > c.before ? 'DAYLIGHT' : 'STANDARD', c.at, c.before, c.after));
  }
  lines.push('END:VTIMEZONE');
  return lines;
}

/** The feed: VCALENDAR text with CRLF line ends. */
export function renderCalendar(input: CalendarInput): string {
  const { schedule, shifts, names, now } = input;
  const events = shifts.filter((s) => s.uids.length > 0);
  const zones = [...new Set(events.map((s) => input.zoneAt(s.start)))].sort();
  const lines = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//tocsin//on-call schedules//EN',
    'CALSCALE:GREGORIAN',
    'METHOD:PUBLISH',
    `X-WR-CALNAME:${text(`On call: ${schedule.name}`)}`,
    ...zones.flatMap((z) => vtimezone(z, input.from - 86_400, input.to + 86_400)),
  ];
  for (const s of events) {
    const zone = input.zoneAt(s.start);
    const who = s.uids.map((u) => names.get(u) ?? `uid ${u}`).join(', ');
    const why = sourceText(s.source);
    lines.push(
      'BEGIN:VEVENT',
      `UID:schedule-${schedule.id}-${s.start}-${s.uids.join('-')}@tocsin`,
      `DTSTAMP:${utcText(now)}`,
      dateTime('DTSTART', zone, s.start),
      dateTime('DTEND', zone, s.end),
      `SUMMARY:${text(`On call: ${who}`)}`,
      `DESCRIPTION:${text(`${schedule.name}: ${why}; uids ${s.uids.join(', ')}`)}`,
      'TRANSP:TRANSPARENT',
      'END:VEVENT',
    );
  }
  lines.push('END:VCALENDAR');
  return `${lines.map(fold).join('\r\n')}\r\n`;
}
