import { randomBytes } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { lambdaContext } from './local/lambda.ts';

// As on Lambda (on-demand concurrency): Powertools reads this when the logger is created.
process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
process.env.LOG_LEVEL = 'INFO';
const { logger } = await import('./log.ts');
const { observed } = await import('./observe.ts');

/** The JSON log lines written to stdout while `run` runs. */
async function logLines(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

process.env.TOCSIN_LOCAL = '1';
process.env.TABLE_NAME ??= 'tocsin-test';
process.env.SEAL_KEY ??= randomBytes(32).toString('base64');

describe('observed Lambda entries', () => {
  it('log with the invocation request id and the cold-start flag (true only the first time)', async () => {
    const handler = observed(async (_event: unknown, _context: Context) => {
      logger.info('working');
      return 'ok';
    });
    const first = lambdaContext('tocsin-test');
    const second = lambdaContext('tocsin-test');
    const [a] = await logLines(() => handler({}, first));
    const [b] = await logLines(() => handler({}, second));
    expect(a).toMatchObject({
      message: 'working',
      function_request_id: first.awsRequestId,
      cold_start: true,
    });
    expect(b).toMatchObject({ function_request_id: second.awsRequestId, cold_start: false });
    expect(a.function_name).toBe('tocsin-test');
  });
});
