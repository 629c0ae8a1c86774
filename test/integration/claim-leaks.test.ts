import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localDynamoClient } from '../../shared/local/dynamo.ts';
import { localSqsClient } from '../../shared/local/queues.ts';
import { linksIn } from '../support/claims.ts';
import { FakeClient, type Fakes, startFakes } from '../support/fakes.ts';
import { fixturePath } from '../support/seed.ts';
import {
  admin,
  type ChildStack,
  createApp,
  reportAlarm,
  requestTask,
  startChildStack,
  waitGone,
} from './local-child-stack.ts';

/**
 * A claim link's token lives in the message sent and nowhere else (API guide §11.7). A stack of its
 * own (a child process, every log line at DEBUG, every queue message journaled by the SQS emulator)
 * takes 1,000 alarms that each open a workflow; their e-mails and robot messages carry ~4,000 links,
 * and some e-mails keep failing until their jobs are dead letters. Then every table item, every
 * message any queue carried, every dead letter and every log line is searched for every token.
 */
const ALARMS = 1_000;
/** Alarms whose e-mails fail (SMTP 451) until their jobs go to the notify dead-letter queue. */
const DEAD = 5;

let dir: string;
const stateFile = () => join(dir, 'state.json');
let fakes: Fakes;
let stack: ChildStack;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tocsin-claim-leaks-'));
  fakes = await startFakes();
  stack = await startChildStack({
    dataDir: ':memory:',
    stateFile: stateFile(),
    env: {
      ...fakes.env,
      LOG_LEVEL: 'DEBUG',
      TOCSIN_QUEUE_LOG: join(dir, 'queues.jsonl'),
      NOTIFY_BACKOFF_SECONDS: '1,1,1,1,1,1',
      ROBOT_MAX_PER_MINUTE: '100000',
      ALARM_RATE_LIMIT: '100000',
    },
  });
}, 120_000);

afterAll(async () => {
  if (stack && stack.child.exitCode === null && stack.child.signalCode === null) {
    stack.child.kill('SIGTERM');
    await stack.exited;
  }
  if (stack) await waitGone(stack.javaPid, 10_000);
  await fakes?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** Every item of the stack's table, as text (compressed log rows inflated). */
async function tableTexts(): Promise<string[]> {
  const client = DynamoDBDocumentClient.from(localDynamoClient(stack.dynamoEndpoint, stack.region));
  const out: string[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: stack.tableName, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      out.push(
        JSON.stringify(item, (_k, v) => (v instanceof Uint8Array ? inflateRawSync(v).toString('utf8') : v)),
      );
    }
    start = page.LastEvaluatedKey;
  } while (start);
  client.destroy();
  return out;
}

/** Every message left in the dead-letter queues (taken out). */
async function deadLetters(): Promise<string[]> {
  const sqs = localSqsClient(stack.sqsEndpoint, stack.region);
  const out: string[] = [];
  for (const url of Object.values(stack.dlqUrls)) {
    for (;;) {
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
      const messages = got.Messages ?? [];
      if (messages.length === 0) break;
      out.push(...messages.map((m) => m.Body ?? ''));
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: url,
          Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
        }),
      );
    }
  }
  sqs.destroy();
  return out;
}

/** The tokens (of `tokens`) a text holds: every run of base64url long enough to hold one is looked at. */
function tokensIn(text: string, tokens: Set<string>, lengths: number[]): string[] {
  const found: string[] = [];
  for (const [run] of text.matchAll(/[A-Za-z0-9_-]{40,}/g)) {
    for (const n of lengths) {
      for (let i = 0; i + n <= run.length; i++)
        if (tokens.has(run.slice(i, i + n))) found.push(run.slice(i, i + n));
    }
  }
  return found;
}

describe('a 1,000-alarm run', () => {
  it('leaves no token in any table item, queue message, dead letter or log line', async () => {
    // Arrange: the directory, an app, a person by e-mail and a group robot on a task whose alarms open workflows.
    const run = randomUUID().slice(0, 8);
    const person = {
      uid: 9_001,
      username: 'Leak Test',
      user: `leak-${run}`,
      email: `leak-${run}@example.com`,
    };
    const people = join(dir, 'people.json');
    writeFileSync(people, JSON.stringify({ users: [{ ...person, role: 0 }] }));
    expect((await admin(stateFile(), 'import', fixturePath)).code).toBe(0);
    expect((await admin(stateFile(), 'import', people)).code).toBe(0);
    const app = await createApp(stateFile());
    const robot = `tok${randomUUID().replace(/-/g, '')}`;
    const client = new FakeClient(fakes.url);
    await client.robot(robot);
    const created = await requestTask(
      stack.url,
      app,
      { email: [person.uid], dinggroup: [{ webhook: robot, secret: `SEC${run}` }] },
      {
        workflow: { enable: true, reminds: [] },
        compress: { enable: true, method: 3, strategy: 1, strategy_cycle: 10 },
        permission: { rw: [person.uid], ro: [] },
      },
    );
    expect([created.code, created.msg]).toEqual([0, 'success']);
    const task = created.task!;
    const markers = Array.from({ length: ALARMS }, () => randomUUID());
    // Both of a dead marker's e-mail jobs fail every one of their 7 attempts (more answers scripted
    // than 14: a job the queue delivers twice may send twice).
    await client.script(
      'smtp',
      markers.slice(0, DEAD).flatMap((match) => Array.from({ length: 40 }, () => ({ smtpCode: 451, match }))),
    );
    // Act: 1,000 alarms, 20 at a time.
    for (let i = 0; i < ALARMS; i += 20) {
      const answers = await Promise.all(
        markers.slice(i, i + 20).map((marker) => reportAlarm(stack.url, task, { marker })),
      );
      expect(answers.map((a) => a.code)).toEqual(answers.map(() => 0));
    }
    // Every message sent (the `generated` and the alarm's, by e-mail and robot), the dead ones dead.
    const mails = await client.waitFor('mails', () => client.mails(), 2 * (ALARMS - DEAD), 240_000);
    const robots = await client.waitFor(
      'robot messages',
      () => client.requests('dinggroup'),
      2 * ALARMS,
      240_000,
    );
    const journal = () =>
      readFileSync(join(dir, 'queues.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { queue: string; status: string; body: string });
    await client.waitFor(
      'dead notification jobs',
      // Put there by the consumer after their last attempt (a message sent to the DLQ), or by the
      // queue's redrive policy.
      async () =>
        journal().filter((m) => m.queue.includes('notify') && (m.status === 'dlq' || m.queue.endsWith('-dlq'))),
      2 * DEAD,
      120_000,
    );
    // Assert: the links, one per message.
    const tokens = new Set([
      ...mails.flatMap((m) => linksIn(m.html)),
      ...robots.flatMap((r) => linksIn(r.json.markdown.text)),
    ]);
    expect(tokens.size).toBeGreaterThanOrEqual(4 * ALARMS - 2 * DEAD);
    const lengths = [...new Set([...tokens].map((t) => t.length))];
    // ... and where they are not.
    const messages = journal();
    const sources: Record<string, string[]> = {
      'table items': await tableTexts(),
      'queue messages': messages.map((m) => m.body),
      'dead letters': await deadLetters(),
      'log lines': stack.output().split('\n'),
    };
    expect(messages.filter((m) => m.body.includes('"claim":{"workflow_id"')).length).toBeGreaterThanOrEqual(
      4 * ALARMS,
    );
    expect(sources['dead letters'].length).toBeGreaterThanOrEqual(2 * DEAD);
    // Each message recorded (a notification log item holds the attempts of a batch) carries its link redacted.
    const redacted = sources['table items'].reduce((n, t) => n + t.split('/claim?t=…').length - 1, 0);
    expect(redacted).toBeGreaterThanOrEqual(4 * ALARMS - 2 * DEAD);
    // The log has a line per request and per delivery attempt (paths and masked targets only).
    expect(
      sources['log lines'].filter((l) => l.includes('POST /alarm/report 200')).length,
    ).toBeGreaterThanOrEqual(ALARMS);
    expect(
      sources['log lines'].filter((l) => / dinggroup .*: delivered/.test(l)).length,
    ).toBeGreaterThanOrEqual(2 * ALARMS);
    for (const [what, texts] of Object.entries(sources)) {
      const leaks = texts.flatMap((t) => tokensIn(t, tokens, lengths));
      const links = texts.filter((t) => /\/claim\?t=[A-Za-z0-9_-]/.test(t));
      expect({ what, leaks: leaks.slice(0, 3), links: links.slice(0, 3) }).toEqual({
        what,
        leaks: [],
        links: [],
      });
    }
  }, 600_000);
});
