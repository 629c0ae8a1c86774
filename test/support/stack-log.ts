import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { UNDER_CHAOS } from './chaos.ts';

/**
 * The shared test stack's log (its error lines: the stack runs at LOG_LEVEL=ERROR), written to a file
 * by every thread of the stack (TOCSIN_LOG_FILE). A test that makes the stack fail on purpose claims
 * the lines it expects with `stackLogLine`; when the run ends, the global setup prints the lines no
 * test claimed, so an unexpected error is never lost and an expected one never printed.
 */

/** One logged item: its line and the indented lines under it (an error's stack). */
function entriesOf(text: string): string[] {
  const entries: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (/^\s/.test(line) && entries.length > 0) entries[entries.length - 1] += `\n${line}`;
    else entries.push(line);
  }
  return entries;
}

const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');
const claimsOf = (file: string) => read(`${file}.claimed`).split('\n').filter(Boolean);

/**
 * Waits for a line of the stack's log matching `pattern` that no test claimed yet, claims it and
 * returns it (its first line); throws after `timeoutMs`.
 */
export async function stackLogLine(pattern: RegExp, timeoutMs = 15_000): Promise<string> {
  const file = inject('stack').logFile;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const claimed = claimsOf(file);
    const line = entriesOf(read(file))
      .map((e) => e.split('\n')[0])
      .find((l) => pattern.test(l) && !claimed.includes(l));
    if (line) {
      appendFileSync(`${file}.claimed`, `${line}\n`);
      return line;
    }
    if (Date.now() > deadline) throw new Error(`the stack logged no line matching ${pattern}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Prints what the stack logged that no test claimed (the global setup's teardown). */
export function reportUnexpectedLog(file: string): void {
  const claimed = claimsOf(file);
  const expected = new Set(claimed);
  const left = entriesOf(read(file)).filter((e) => {
    const line = e.split('\n')[0];
    const i = claimed.indexOf(line);
    // Under the chaos queue a copy of a message may log what its first delivery logged.
    if (i < 0) return !(UNDER_CHAOS && expected.has(line));
    claimed.splice(i, 1);
    return false;
  });
  if (left.length > 0)
    console.error(`the local stack logged ${left.length} line(s) no test expected:\n${left.join('\n')}`);
}
