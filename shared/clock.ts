/**
 * The service's notion of "now". In AWS the offset is always 0. The local runtime's test clock
 * (`POST /_local/clock`) moves it forward so tests can cross compression windows, pause expiries
 * and reminder intervals without waiting.
 */
const OFFSET = Symbol.for('tocsin.clock.offset');
/**
 * The offset (ms) lives on the global object, so that every copy of this module in a thread reads the
 * same one: the local stack can run the deployed bundles (`npm start -- --bundles`), each of which
 * carries its own copy of this module.
 */
const holder = globalThis as { [OFFSET]?: Float64Array<ArrayBufferLike> };
holder[OFFSET] ??= new Float64Array(1);
const offset = () => holder[OFFSET] as Float64Array<ArrayBufferLike>;

/**
 * Local runtime: every thread of the local stack (the API, the consumer "containers") shares one
 * offset, so a test clock moved through the API moves for the consumers too.
 */
export function shareClock(buffer: SharedArrayBuffer): void {
  const shared = new Float64Array(buffer);
  if (offset()[0] !== 0) shared[0] = offset()[0];
  holder[OFFSET] = shared;
}

export function nowMs(): number {
  return Date.now() + offset()[0];
}

/** Unix seconds. */
export function nowSeconds(): number {
  return Math.floor(nowMs() / 1000);
}

export function advanceClock(seconds: number): void {
  offset()[0] += seconds * 1000;
}

export function clockOffsetSeconds(): number {
  return offset()[0] / 1000;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
/** The last answer per time zone: reports of one second share their report_time. */
const lastFormatted = new Map<string, { seconds: number; text: string }>();

/** `YYYY-MM-DD HH:MM:SS` of Unix seconds in an IANA time zone (report_time, template times). */
export function formatDateTime(seconds: number, timeZone: string): string {
  const last = lastFormatted.get(timeZone);
  if (last?.seconds === seconds) return last.text;
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
  const text = `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
  lastFormatted.set(timeZone, { seconds, text });
  return text;
}
