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
