import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { baseUrl, serviceNow } from '../support/client.ts';
import { createTask } from '../support/tasks.ts';

/**
 * Existing alarm senders must keep working unchanged (API guide §3.3): a bash + curl + md5sum
 * client, run as a real process against the local stack.
 */
const run = promisify(execFile);
const script = resolve(import.meta.dirname, '../fixtures/legacy-client.sh');

async function legacy(args: string[], timestamp: number, contentType?: string) {
  const { stdout } = await run('bash', [script, ...args], {
    env: {
      ...process.env,
      TIMESTAMP: String(timestamp),
      ...(contentType === undefined ? {} : { CONTENT_TYPE: contentType }),
    },
    timeout: 15_000,
  });
  return JSON.parse(stdout) as { code: number; msg: string; data: Record<string, unknown> };
}

describe('legacy shell client', () => {
  it('reports an alarm with an MD5 signature and numeric-string taskid/timestamp', async () => {
    // Arrange: the sender's clock agrees with the service's (the test clock may have moved it)
    const t = await createTask();
    // Act
    const res = await legacy([baseUrl(), String(t.id), t.token], await serviceNow());
    // Assert
    expect(res).toMatchObject({ code: 0, msg: 'success' });
    expect(res.data.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.data.report_time).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it.each([
    ['curl -d default (form-encoded)', 'application/x-www-form-urlencoded'],
    ['no content type', ''],
  ])('accepts a JSON body sent with %s', async (_name, contentType) => {
    const t = await createTask();
    const res = await legacy([baseUrl(), String(t.id), t.token], await serviceNow(), contentType);
    expect(res).toMatchObject({ code: 0, msg: 'success' });
  });

  it('gets the service errors in the envelope: a wrong token and a refused body', async () => {
    const t = await createTask();
    const now = await serviceNow();
    const wrongToken = await legacy([baseUrl(), String(t.id), t.secret], now);
    const badLevel = await legacy([baseUrl(), String(t.id), t.token, '{"a":1}', '7'], now);
    expect(wrongToken).toEqual({ code: 401, msg: 'signature invalid', data: {} });
    expect(badLevel).toMatchObject({ code: 4000, msg: 'level must be one of 0, 1, 2, 3' });
  });
});
