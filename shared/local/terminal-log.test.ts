import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { installTerminalLog, terminalLine } from './terminal-log.ts';

const at = '2026-11-26T09:45:41.123Z';
const local = (iso: string) => new Date(iso).toTimeString().slice(0, 8);

describe('terminalLine', () => {
  it('prints a request as method, path, status, time and code', () => {
    const line = terminalLine({
      level: 'INFO',
      message: 'request',
      timestamp: at,
      service: 'tocsin',
      method: 'POST',
      path: '/alarm/report',
      status: 200,
      ms: 4,
      code: 0,
    });
    expect(line).toBe(`${local(at)} POST /alarm/report 200 4 ms code 0`);
  });

  it('prints a delivery as channel, masked target and outcome', () => {
    const base = { level: 'INFO', message: 'delivery', timestamp: at, id: '1:u:ALARM' };
    expect(
      terminalLine({
        ...base,
        channel: 'email',
        target: 'uid 1 a***@example.com',
        outcome: 'skipped',
        code: 'not_configured',
        attempt: 1,
      }),
    ).toBe(`${local(at)} email uid 1 a***@example.com: skipped (not_configured)`);
    expect(
      terminalLine({
        ...base,
        channel: 'webhook',
        target: 'http://127.0.0.1:4000',
        outcome: 'failed',
        code: 'HTTP 503',
        attempt: 3,
      }),
    ).toBe(`${local(at)} webhook http://127.0.0.1:4000: failed (HTTP 503), attempt 3`);
  });

  it('prints any other item as level, message and its own fields, cut, with the stack of an error', () => {
    const line = terminalLine({
      level: 'ERROR',
      message: 'alarm processing failed; will be retried',
      timestamp: at,
      service: 'tocsin',
      cold_start: true,
      function_name: 'process-alarm',
      taskId: 7,
      note: 'x'.repeat(200),
      error: {
        name: 'TypeError',
        message: 'boom',
        location: 'a.ts:1',
        stack: 'TypeError: boom\n    at f (a.ts:1:1)\n    at g (b.ts:2:2)',
      },
    });
    expect(line.split('\n')).toEqual([
      `${local(at)} ERROR alarm processing failed; will be retried taskId=7 note=${'x'.repeat(119)}… error=TypeError: boom`,
      '    at f (a.ts:1:1)',
      '    at g (b.ts:2:2)',
    ]);
    expect(terminalLine({ level: 'INFO', message: 'due work', timestamp: at, ran: 2 })).toBe(
      `${local(at)} due work ran=2`,
    );
  });
});

describe('installTerminalLog', () => {
  it("replaces the logger's JSON with the line, at the level LOG_LEVEL names", () => {
    const lines: [string, unknown][] = [];
    const log = new Logger({ serviceName: 't', logLevel: 'DEBUG' });
    const saved = process.env.LOG_LEVEL;
    process.env.LOG_LEVEL = 'warn';
    try {
      installTerminalLog(log, (line, level) => lines.push([line, level]));
    } finally {
      process.env.LOG_LEVEL = saved;
    }
    log.info('request', { method: 'GET', path: '/health', status: 200, ms: 1 });
    log.warn('metric contended', { taskId: 1 });
    expect(lines).toEqual([
      [expect.stringMatching(/^\d\d:\d\d:\d\d WARN metric contended taskId=1$/), 'WARN'],
    ]);
  });
});
