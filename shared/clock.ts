/**
 * The service's notion of "now". In AWS the offset is always 0. The local runtime's test clock
 * (`POST /_local/clock`) moves it forward so tests can cross compression windows, pause expiries
 * and reminder intervals without waiting.
 */
let offsetMs = 0;

export function nowMs(): number {
  return Date.now() + offsetMs;
}

/** Unix seconds. */
export function nowSeconds(): number {
  return Math.floor(nowMs() / 1000);
}

export function advanceClock(seconds: number): void {
  offsetMs += seconds * 1000;
}

export function clockOffsetSeconds(): number {
  return offsetMs / 1000;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** `YYYY-MM-DD HH:MM:SS` of Unix seconds in an IANA time zone (report_time, template times). */
export function formatDateTime(seconds: number, timeZone: string): string {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(seconds * 1000)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}
