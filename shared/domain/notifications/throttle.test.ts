import { randomBytes } from 'node:crypto';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { robotThrottle } from './throttle.ts';

/** The robot budget's leases with the table mocked (the counter's conditions: test/integration/notify.test.ts). */
const ddb = mockClient(DynamoDBDocumentClient);
const saved = { ...process.env };
const NOW = 1_800_000_000;
const robot = { webhook: 'token-aaaaaaaaaaaa' };

beforeEach(() => {
  Object.assign(process.env, {
    TABLE_NAME: 'tocsin-test',
    AWS_REGION: 'eu-west-1',
    SEAL_KEY: randomBytes(32).toString('base64'),
    TOCSIN_LOCAL: '0',
  });
  resetConfig();
  ddb.reset();
  ddb.on(UpdateCommand).resolves({});
});
afterEach(() => {
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, saved);
  resetConfig();
});
afterAll(() => ddb.restore());

/** The slots each lease asked for (`:n` of the conditional update). */
const leases = () =>
  ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input.ExpressionAttributeValues?.[':n']);

describe('robotThrottle', () => {
  it('leases slots in growing chunks and spends them from memory: not a write per message', async () => {
    const throttle = robotThrottle({ maxPerMinute: 1_000_000, blockSeconds: 60 });
    for (let i = 0; i < 31; i++) expect(await throttle.take('dinggroup', robot, NOW)).toBe(true);
    // 1 + 2 + 4 + 8 + 16 = 31 messages in five leases
    expect(leases()).toEqual([1, 2, 4, 8, 16]);
  });

  it('leases at most a tenth of a small budget at a time (DingTalk: 20 a minute, leases of 2)', async () => {
    const throttle = robotThrottle({ maxPerMinute: 20, blockSeconds: 60 });
    for (let i = 0; i < 6; i++) await throttle.take('dinggroup', robot, NOW);
    expect(leases()).toEqual([1, 2, 2, 2]);
  });

  it('starts again in a new minute, and a backed-off robot loses what the container held', async () => {
    const throttle = robotThrottle({ maxPerMinute: 1_000_000, blockSeconds: 60 });
    for (let i = 0; i < 3; i++) await throttle.take('dinggroup', robot, NOW);
    await throttle.backOff('dinggroup', robot, NOW);
    await throttle.take('dinggroup', robot, NOW);
    await throttle.take('dinggroup', robot, NOW + 60);
    // Leases 1 and 2 (one slot left over), the block, then a lease after it, and one in the next minute
    const calls = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => c.ExpressionAttributeValues?.[':n'] ?? 'block')).toEqual([1, 2, 'block', 1, 1]);
    expect(calls[4].ExpressionAttributeValues?.[':m']).toBe(Math.floor((NOW + 60) / 60));
  });
});
