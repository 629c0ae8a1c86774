import { appendFileSync } from 'node:fs';
import type { Logger } from '@aws-lambda-powertools/logger';
import { logger } from '../log.ts';

/**
 * The local stack's terminal: each log item as one readable line instead of Powertools' JSON (which
 * the functions keep on AWS, where CloudWatch reads it). Lives in the local runtime only, so no
 * Lambda bundle carries it: each thread of the stack (the API's, each consumer's) installs it on its
 * own copy of the logger. The functions' bundles (`npm start -- --bundles`) bring their own loggers
 * and print JSON, as deployed.
 *
 *   14:02:03 POST /alarm/report 200 4 ms code 0
 *   14:02:04 email uid 1 a***@example.com: skipped (not_configured)
 *   14:02:04 webhook http://127.0.0.1:4000: delivered (HTTP 200)
 *   14:02:09 WARN notification not delivered job_id=… channel=sms status=rejected attempt=1
 *
 * It prints what the code logged, nothing more: the code never logs a token, secret, signature or
 * query string (requests are logged by their path).
 */

type Attributes = Record<string, unknown>;
type Printer = {
  printLog(level: number, log: { prepareForPrint(): void; getAttributes(): Attributes }): void;
};

/** Keys every Powertools item carries (context, not news): left out of the line. */
const CONTEXT = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'sampling_rate',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'xray_trace_id',
]);
/** Characters a value is cut to. */
const MAX_VALUE = 120;
/** Lines of an error's stack shown under an ERROR line. */
const STACK_LINES = 5;

const clock = (timestamp: unknown) => {
  const d = typeof timestamp === 'string' ? new Date(timestamp) : new Date();
  return Number.isNaN(d.getTime()) ? '' : d.toTimeString().slice(0, 8);
};

function value(v: unknown): string {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  const flat = (text ?? '').replace(/\s+/g, ' ');
  return flat.length > MAX_VALUE ? `${flat.slice(0, MAX_VALUE - 1)}…` : flat;
}

/** A Powertools error attribute (`{name, message, location, stack}`) on one line, and its stack. */
function errorOf(e: Attributes): { text: string; stack: string[] } {
  const stack = typeof e.stack === 'string' ? e.stack.split('\n').slice(1, 1 + STACK_LINES) : [];
  return { text: `${e.name ?? 'Error'}: ${value(e.message)}`, stack: stack.map((l) => `    ${l.trim()}`) };
}

/** One log item as the terminal shows it (pure). */
export function terminalLine(a: Attributes): string {
  const at = clock(a.timestamp);
  if (a.message === 'request')
    return `${at} ${a.method} ${a.path} ${a.status} ${a.ms} ms${a.code !== undefined ? ` code ${a.code}` : ''}`;
  if (a.message === 'delivery')
    return `${at} ${a.channel} ${a.target || '(none)'}: ${a.outcome}${a.code ? ` (${value(a.code)})` : ''}${
      Number(a.attempt) > 1 ? `, attempt ${a.attempt}` : ''
    }`;
  const level = a.level === 'INFO' ? '' : `${a.level} `;
  const stack: string[] = [];
  const fields = Object.entries(a)
    .filter(([k]) => !CONTEXT.has(k))
    .map(([k, v]) => {
      if (v && typeof v === 'object' && 'stack' in v && 'message' in v) {
        const e = errorOf(v as Attributes);
        if (a.level === 'ERROR' || a.level === 'CRITICAL') stack.push(...e.stack);
        return `${k}=${e.text}`;
      }
      return `${k}=${value(v)}`;
    });
  return [`${at} ${level}${a.message}${fields.length ? ` ${fields.join(' ')}` : ''}`, ...stack].join('\n');
}

/**
 * Where a line goes: the file TOCSIN_LOG_FILE names (every thread of the stack appends to it), else
 * the terminal, warnings and errors to standard error as Powertools sends them.
 */
function toTerminal(line: string, level: unknown): void {
  const file = process.env.TOCSIN_LOG_FILE;
  if (file) appendFileSync(file, `${line}\n`);
  else if (level === 'INFO' || level === 'DEBUG') console.log(line);
  else console.error(line);
}

const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;

/**
 * Prints this thread's log items as terminal lines (the local runtime's threads call it once, after
 * the stack's environment is set: its LOG_LEVEL applies, even to a logger made before).
 */
export function installTerminalLog(target: Logger = logger, write = toTerminal): void {
  const level = process.env.LOG_LEVEL?.toUpperCase();
  if (LEVELS.includes(level as (typeof LEVELS)[number])) target.setLogLevel(level as (typeof LEVELS)[number]);
  (target as unknown as Printer).printLog = (_level, log) => {
    log.prepareForPrint();
    const a = log.getAttributes();
    write(terminalLine(a), a.level);
  };
}
