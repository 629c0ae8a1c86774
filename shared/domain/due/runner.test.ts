import { randomBytes } from 'node:crypto';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { flushMetrics } from '../../metrics.ts';
import { jsonStdout } from '../../testing/stdout.ts';
import { logged } from '../../testing/logs.ts';
import { MalformedDueWork, MAX_ATTEMPTS, runDueWork } from './runner.ts';

/**
 * The runner's metric for work it gives up on. The table's side (leases, DUEDEAD items) is covered
 * against DynamoDB Local in test/integration/due-work.test.ts; here the metric, which the local stack
 * does not write, is read from the embedded-metric lines a Lambda would write.
 */
const ddb = mockClient(DynamoDBDocumentClient);
const saved = { ...process.env };
const NOW = 1_800_000_000;

beforeEach(() => {
  Object.assign(process.env, {
    TABLE_NAME: 'tocsin-test',
    AWS_REGION: 'eu-west-1',
    SEAL_KEY: randomBytes(32).toString('base64'),
    TOCSIN_LOCAL: '0',
  });
  resetConfig();
  flushMetrics();
  ddb.reset();
  ddb.on(UpdateCommand).resolves({});
  ddb.on(PutCommand).resolves({});
  ddb.on(DeleteCommand).resolves({});
});
afterEach(() => {
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, saved);
  resetConfig();
});
afterAll(() => ddb.restore());

/** One due item, found on the first shard queried, that failed `attempts` times before. */
function dueItem(attempts: number) {
  ddb
    .on(QueryCommand)
    .resolvesOnce({ Items: [{ kind: 'reminder', ref: 'wf-1', due_at: NOW - 60, payload: {}, attempts }] })
    .resolves({ Items: [] });
}

const failing = { reminder: async () => Promise.reject(new Error('provider down')) };

describe('DueWorkBuried', () => {
  it('counts an item buried after its last attempt', async () => {
    // Arrange
    dueItem(MAX_ATTEMPTS - 1);
    // Act
    const [summary, errors] = await logged('error', () => runDueWork(failing, NOW));
    expect(errors.map(([m, x]) => [m, x.attempts])).toEqual([['due work failed', MAX_ATTEMPTS]]);
    const lines = await jsonStdout(() => flushMetrics());
    // Assert: the item went to DUEDEAD, and the metric says so once
    expect(summary.failed).toBe(1);
    const buried = ddb.commandCalls(PutCommand).map((c) => c.args[0].input.Item?.entity);
    expect(buried).toEqual(['due_dead']);
    const metric = lines.filter((l) => 'DueWorkBuried' in l);
    expect(metric.map((l) => l.DueWorkBuried)).toEqual([1]);
    expect(metric[0]).toMatchObject({ service: 'tocsin' });
  });

  it('counts nothing for an item that is retried', async () => {
    // Arrange
    dueItem(MAX_ATTEMPTS - 2);
    // Act
    const [summary, errors] = await logged('error', () => runDueWork(failing, NOW));
    expect(errors.map(([m, x]) => [m, x.attempts])).toEqual([['due work failed', MAX_ATTEMPTS - 1]]);
    const lines = await jsonStdout(() => flushMetrics());
    // Assert
    expect(summary.failed).toBe(1);
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    expect(lines.filter((l) => 'DueWorkBuried' in l)).toEqual([]);
  });
});

describe('malformed due work', () => {
  it('is kept for an operator at its first run, with the reason, not retried', async () => {
    // Arrange: an item whose payload its handler cannot read
    dueItem(0);
    const malformed = {
      reminder: async () => Promise.reject(new MalformedDueWork('payload is not a reminder')),
    };
    // Act
    const [summary, errors] = await logged('error', () => runDueWork(malformed, NOW));
    // Assert
    expect(summary.failed).toBe(1);
    expect(errors.map(([m, x]) => [m, x.attempts])).toEqual([
      ['due work malformed; kept for an operator', 1],
    ]);
    const buried = ddb.commandCalls(PutCommand).map((c) => c.args[0].input.Item);
    expect(buried).toMatchObject([{ entity: 'due_dead', attempts: 1, error: 'payload is not a reminder' }]);
  });
});
