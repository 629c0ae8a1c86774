import { randomBytes } from 'node:crypto';
import {
  BatchExecuteStatementCommand,
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
import type { LeasedDue } from './repository.ts';
import {
  dispatchDue,
  dueMessages,
  ITEMS_PER_MESSAGE,
  MalformedDueWork,
  MAX_ATTEMPTS,
  runDueItems,
} from './runner.ts';

/**
 * The runner's decisions with the table mocked: the metric for work it gives up on (which the local
 * stack does not write, read from the embedded-metric lines a Lambda would write), and how the
 * dispatcher paces itself. The table's side (leases, DUEDEAD items, two runners at once) is covered
 * against DynamoDB Local in test/integration/due-work.test.ts.
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
  ddb.on(BatchExecuteStatementCommand).callsFake((input: { Statements: unknown[] }) => ({
    Responses: input.Statements.map(() => ({})),
  }));
});
afterEach(() => {
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, saved);
  resetConfig();
});
afterAll(() => ddb.restore());

/** One leased due item that failed `attempts` times before. */
const leased = (attempts: number): LeasedDue => ({
  kind: 'reminder',
  ref: 'wf-1',
  due_at: NOW - 60,
  payload: {},
  attempts,
  token: 'token-1',
});

const failing = { reminder: async () => Promise.reject(new Error('provider down')) };

describe('DueWorkBuried', () => {
  it('counts an item buried after its last attempt', async () => {
    // Act
    const [summary, errors] = await logged('error', () =>
      runDueItems([leased(MAX_ATTEMPTS - 1)], failing, NOW),
    );
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
    // Act
    const [summary, errors] = await logged('error', () =>
      runDueItems([leased(MAX_ATTEMPTS - 2)], failing, NOW),
    );
    expect(errors.map(([m, x]) => [m, x.attempts])).toEqual([['due work failed', MAX_ATTEMPTS - 1]]);
    const lines = await jsonStdout(() => flushMetrics());
    // Assert: kept for its retry a minute later (its lease), nothing buried
    expect(summary.failed).toBe(1);
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    expect(ddb.commandCalls(UpdateCommand)[0].args[0].input.ExpressionAttributeValues).toMatchObject({
      ':a': MAX_ATTEMPTS - 1,
      ':retry': NOW + 60,
      ':token': 'token-1',
    });
    expect(lines.filter((l) => 'DueWorkBuried' in l)).toEqual([]);
  });
});

describe('runDueItems', () => {
  it('removes the done items together, each on its lease token', async () => {
    const items = Array.from({ length: 30 }, (_, i) => ({ ...leased(0), ref: `r${i}`, token: `t${i}` }));
    const summary = await runDueItems(items, { reminder: async () => undefined }, NOW);
    expect(summary).toEqual({ ran: 30, failed: 0 });
    const statements = ddb
      .commandCalls(BatchExecuteStatementCommand)
      .flatMap((c) => c.args[0].input.Statements ?? []);
    expect(statements).toHaveLength(30);
    expect(
      statements.every((s) => s.Statement?.startsWith('DELETE') && s.Statement.includes('lease_token')),
    ).toBe(true);
    expect(ddb.commandCalls(BatchExecuteStatementCommand)).toHaveLength(2);
  });
});

describe('dispatchDue', () => {
  /** A shard that holds `n` items due by NOW (the first shard queried), the others nothing. */
  function shardOf(n: number, next: () => number | undefined = () => undefined) {
    let given = false;
    ddb.on(QueryCommand).callsFake((input: { KeyConditionExpression: string }) => {
      if (input.KeyConditionExpression.includes('> :after')) {
        const at = next();
        return { Items: at === undefined ? [] : [{ due_at: at }] };
      }
      if (given) return { Items: [] };
      given = true;
      return {
        Items: Array.from({ length: n }, (_, i) => ({
          pk: 'DUE#0',
          sk: `${NOW}#reminder#r${i}`,
          kind: 'reminder',
          ref: `r${i}`,
          due_at: NOW,
          payload: {},
        })),
      };
    });
  }

  it('leases what is due and sends it on, ITEMS_PER_MESSAGE to a message (one pass)', async () => {
    // Arrange
    shardOf(60);
    const sent: LeasedDue[][] = [];
    // Act
    const summary = await dispatchDue({
      now: () => NOW,
      kinds: new Set(['reminder']),
      send: async (items) => void sent.push(items),
    });
    // Assert
    expect(summary).toEqual({ dispatched: 60, passes: 1 });
    const messages = dueMessages(sent.flat());
    expect(messages.map((m) => m.items.length)).toEqual([ITEMS_PER_MESSAGE, ITEMS_PER_MESSAGE, 10]);
    expect(new Set(sent.flat().map((d) => d.token)).size).toBe(60);
  });

  it('polling, sleeps until the next item falls due, and stops when the next is past its deadline', async () => {
    // Arrange: 30 s left; nothing due now, an item due in 10 s, then one due in 100 s
    let clock = NOW;
    shardOf(0, () => (clock < NOW + 10 ? NOW + 10 : NOW + 100));
    let left = 30_000;
    const slept: number[] = [];
    // Act
    const summary = await dispatchDue({
      now: () => clock,
      kinds: new Set(['reminder']),
      send: async () => undefined,
      remainingMs: () => left,
      sleep: async (ms) => {
        slept.push(ms);
        clock += ms / 1000;
        left -= ms;
      },
    });
    // Assert: one sleep of 10 s and a second pass; the item due in 100 s is the next run's
    expect(slept).toEqual([10_000]);
    expect(summary.passes).toBe(2);
  });
});

describe('malformed due work', () => {
  it('is kept for an operator at its first run, with the reason, not retried', async () => {
    // Arrange: an item whose payload its handler cannot read
    const malformed = {
      reminder: async () => Promise.reject(new MalformedDueWork('payload is not a reminder')),
    };
    // Act
    const [summary, errors] = await logged('error', () => runDueItems([leased(0)], malformed, NOW));
    // Assert
    expect(summary.failed).toBe(1);
    expect(errors.map(([m, x]) => [m, x.attempts])).toEqual([
      ['due work malformed; kept for an operator', 1],
    ]);
    const buried = ddb.commandCalls(PutCommand).map((c) => c.args[0].input.Item);
    expect(buried).toMatchObject([{ entity: 'due_dead', attempts: 1, error: 'payload is not a reminder' }]);
  });
});
