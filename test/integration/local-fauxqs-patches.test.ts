import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { type LocalQueues, localSqsClient, startQueues } from '../../shared/local/queues.ts';
import { fauxqsPatches, fauxqsWithout } from '../fixtures/fauxqs-without.ts';

/**
 * The SQS emulator as patched at install (patches/fauxqs+2.4.1+*.patch): what each patch changes, and
 * the stack's queues with each patch left out (a copy of the installed fauxqs without it), which
 * still work. Real fauxqs servers in this process, with a data directory as `npm start` has.
 */
const REGION = 'us-east-1';
const open: { q: LocalQueues; client: SQSClient }[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const { q, client } of open.splice(0)) {
    client.destroy();
    await q.stop();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tocsin-fauxqs-'));
  dirs.push(d);
  return d;
}

/** The queues as the stack starts them, on `dir`, with fauxqs less the patch `without` if given. */
async function start(dir: string, without?: string) {
  const emulator = without ? await fauxqsWithout(without) : undefined;
  const q = await startQueues(0, REGION, dir, emulator ? { emulator } : {});
  const client = localSqsClient(q.endpoint, REGION);
  open.push({ q, client });
  return { q, client };
}

async function stop(q: LocalQueues) {
  const [{ client }] = open.splice(
    open.findIndex((o) => o.q === q),
    1,
  );
  client.destroy();
  await q.stop();
}

const receive = async (client: SQSClient, url: string, max = 10): Promise<Message[]> =>
  (
    await client.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: max,
        MessageSystemAttributeNames: ['All'],
      }),
    )
  ).Messages ?? [];

const sendBatch = (client: SQSClient, url: string, bodies: string[]) =>
  client.send(
    new SendMessageBatchCommand({
      QueueUrl: url,
      Entries: bodies.map((b, i) => ({ Id: String(i), MessageBody: b })),
    }),
  );

/**
 * What the stack does with a queue, then a restart on the same data directory: a batch of three sent,
 * received, two deleted in a batch, one left in flight; after the restart (unclean: what was held is
 * released) the one left is there again. Returns what each step saw.
 */
async function workOnQueues(dir: string, without?: string) {
  const first = await start(dir, without);
  const url = first.q.urls.alarm;
  const sent = await sendBatch(first.client, url, ['a', 'b', 'c']);
  const got = await receive(first.client, url);
  const kept = got.find((m) => m.Body === 'b');
  const deleted = await first.client.send(
    new DeleteMessageBatchCommand({
      QueueUrl: url,
      Entries: got
        .filter((m) => m !== kept)
        .map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
    }),
  );
  await stop(first.q);
  const second = await start(dir, without);
  const after = await receive(second.client, second.q.urls.alarm);
  return {
    sent: sent.Successful?.length,
    received: got.map((m) => m.Body).sort(),
    deleted: deleted.Successful?.length,
    released: second.q.released,
    after: after.map((m) => [m.Body, m.Attributes?.ApproximateReceiveCount]),
  };
}

const WORKED = { sent: 3, received: ['a', 'b', 'c'], deleted: 2, released: 1, after: [['b', '2']] };

it('every patch in patches/ is one this file covers', () => {
  expect([...fauxqsPatches().keys()]).toEqual([
    'listen-host',
    'ready-keeps-receive-count',
    'sqlite-settings',
  ]);
});

it('the queues work as the stack uses them, with every patch', async () => {
  expect(await workOnQueues(tempDir())).toEqual(WORKED);
});

describe('listen-host (the emulator listens on 127.0.0.1 only)', () => {
  it('without it, the stack refuses to start the emulator (it would listen on every interface) and frees its port', async () => {
    // Arrange: a free port, so that whether it is free again afterwards says something.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '0.0.0.0', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const emulator = await fauxqsWithout('listen-host');

    // Act
    const refused = await startQueues(port, REGION, tempDir(), { emulator }).catch((err: Error) => err);
    const freeAgain = await new Promise<boolean>((resolve) => {
      const s = createServer()
        .once('error', () => resolve(false))
        .listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
    });

    // Assert
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/not 127\.0\.0\.1 only: fauxqs is not patched/);
    expect(freeAgain).toBe(true);
  });
});

describe('ready-keeps-receive-count (a message made visible again keeps its receive count)', () => {
  it('with it, ChangeMessageVisibility 0 returns the message at once, counted, and durably', async () => {
    // Arrange
    const dir = tempDir();
    const { q, client } = await start(dir);
    await sendBatch(client, q.urls.alarm, ['m']);
    const [m] = await receive(client, q.urls.alarm, 1);

    // Act
    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: q.urls.alarm,
        ReceiptHandle: m.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const again = await receive(client, q.urls.alarm, 1);

    // Assert
    expect(again.map((x) => [x.Body, x.Attributes?.ApproximateReceiveCount])).toEqual([['m', '2']]);
  });

  it('without it, the queues answer, but a message made visible again is lost to the running emulator (the fix is needed)', async () => {
    // Arrange: a batch sent and received; one deleted, one to be made visible again
    const { q, client } = await start(tempDir(), 'ready-keeps-receive-count');
    const url = q.urls.alarm;
    const sent = await sendBatch(client, url, ['gone', 'back']);
    const got = await receive(client, url);
    const back = got.find((m) => m.Body === 'back');
    const deleted = await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: got
          .filter((m) => m !== back)
          .map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );

    // Act: what a consumer whose retries are used up does (and the stack's release at a start)
    const release = await client
      .send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: back?.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      )
      .then(
        () => 'ok',
        (err: Error & { $metadata?: { httpStatusCode?: number; attempts?: number } }) =>
          `${err.name} ${err.$metadata?.httpStatusCode} after ${err.$metadata?.attempts} attempt(s)`,
      );
    const again = await receive(client, url);

    // Assert: the store refused the first attempt's write (NULL into a NOT NULL receive count, a 500)
    // after the message had left the in-flight set in memory, so the SDK's retry finds it not in
    // flight, and no receive finds it
    expect([sent.Successful?.length, got.length, deleted.Successful?.length]).toEqual([2, 2, 1]);
    expect(release).toBe('MessageNotInflight 400 after 2 attempt(s)');
    expect(again).toEqual([]);
  });
});

/** Reads the SQS emulator's store from a connection of its own: the messages it holds, or the error. */
function readStore(dir: string): number | string {
  try {
    const db = new DatabaseSync(join(dir, 'fauxqs.db'), { readOnly: true });
    try {
      return Number(db.prepare('SELECT count(*) AS n FROM sqs_messages').get()?.n);
    } finally {
      db.close();
    }
  } catch (err) {
    return (err as Error).message;
  }
}

describe('sqlite-settings (synchronous = NORMAL, locking_mode = EXCLUSIVE)', () => {
  it('with it, the store is the running emulator’s alone (its file lock is held)', async () => {
    const dir = tempDir();
    const { q, client } = await start(dir);
    await sendBatch(client, q.urls.alarm, ['m']);

    expect(readStore(dir)).toMatch(/locked/);
  });

  it('without it, the stack still works, and another connection reads what it wrote through', async () => {
    const dir = tempDir();
    const worked = await workOnQueues(dir, 'sqlite-settings');
    const { q, client } = await start(dir, 'sqlite-settings');
    await sendBatch(client, q.urls.alarm, ['m', 'n']);

    expect(worked).toEqual(WORKED);
    expect(readStore(dir)).toBe(3); // 'b' from before the restart, and the two just sent
  });
});

