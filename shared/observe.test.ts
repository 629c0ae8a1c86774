import { randomBytes } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { lambdaContext } from './local/lambda.ts';
import { jsonStdout } from './testing/stdout.ts';

// As on Lambda (on-demand concurrency): Powertools reads this when the logger is created.
process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
process.env.LOG_LEVEL = 'INFO';
const { logger } = await import('./log.ts');
const { observed } = await import('./observe.ts');

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
    const [a] = await jsonStdout(() => handler({}, first));
    const [b] = await jsonStdout(() => handler({}, second));
    expect(a).toMatchObject({
      message: 'working',
      function_request_id: first.awsRequestId,
      cold_start: true,
    });
    expect(b).toMatchObject({ function_request_id: second.awsRequestId, cold_start: false });
    expect(a.function_name).toBe('tocsin-test');
  });
});
