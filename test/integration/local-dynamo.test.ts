import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DescribeTableCommand, UpdateTableCommand } from '@aws-sdk/client-dynamodb';
import {
  BatchExecuteStatementCommand,
  DynamoDBDocumentClient,
  ExecuteStatementCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureTable, localDynamoClient, startDynamo } from '../../shared/local/dynamo.ts';

/**
 * DynamoDB Local as the stack starts it: as shipped, through its launcher
 * (shared/local/dynamo/LocalDynamo.java) and the launcher's one patch, compiled on its own
 * (SqliteSettings.java), which costs only itself when it cannot apply. Each case starts a JVM of its
 * own on 127.0.0.1 and makes the requests the stack depends on: PartiQL INSERT batches (one text, a
 * duplicate key, a malformed statement), reads, a paginated PartiQL SELECT, and a write and a query
 * after the table's description changed (an index added).
 */
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });

const TABLE = 'launched';
const insert = (sk: string, v: string) => ({
  Statement: `INSERT INTO "${TABLE}" VALUE {'pk': ?, 'sk': ?, 'v': ?}`,
  Parameters: ['P', sk, v],
});

/** The requests, against DynamoDB Local at `endpoint`; what each answered. */
async function exercise(endpoint: string) {
  const raw = localDynamoClient(endpoint);
  const doc = DynamoDBDocumentClient.from(raw);
  try {
    await ensureTable(raw, TABLE);
    const batch = async (statements: ReturnType<typeof insert>[]) =>
      ((await doc.send(new BatchExecuteStatementCommand({ Statements: statements }))).Responses ?? []).map(
        (r) => r.Error?.Code ?? 'ok',
      );
    const first = await batch([insert('a', '1'), insert('b', '2'), insert('c', '3')]);
    const second = await batch([
      insert('a', 'again'),
      { Statement: `INSERT INTO "${TABLE}" VALUE {'pk': ?,`, Parameters: ['P'] },
      insert('d', '4'),
    ]);
    const got = (
      await doc.send(new GetCommand({ TableName: TABLE, Key: { pk: 'P', sk: 'a' }, ConsistentRead: true }))
    ).Item;

    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const out = await doc.send(
        new ExecuteStatementCommand({
          Statement: `SELECT sk FROM "${TABLE}" WHERE pk = ?`,
          Parameters: ['P'],
          Limit: 3,
          NextToken: token,
        }),
      );
      pages.push((out.Items ?? []).map((i) => String(i.sk)));
      token = out.NextToken;
    } while (token && pages.length < 10);

    // The description changes (an index added); a write after it is indexed.
    await raw.send(
      new UpdateTableCommand({
        TableName: TABLE,
        AttributeDefinitions: [
          { AttributeName: 'xpk', AttributeType: 'S' },
          { AttributeName: 'xsk', AttributeType: 'S' },
        ],
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: 'gsix',
              KeySchema: [
                { AttributeName: 'xpk', KeyType: 'HASH' },
                { AttributeName: 'xsk', KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: 'ALL' },
            },
          },
        ],
      }),
    );
    for (let i = 0; i < 100; i++) {
      const t = await raw.send(new DescribeTableCommand({ TableName: TABLE }));
      if (t.Table?.GlobalSecondaryIndexes?.find((g) => g.IndexName === 'gsix')?.IndexStatus === 'ACTIVE')
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await doc.send(new PutCommand({ TableName: TABLE, Item: { pk: 'Q', sk: '1', xpk: 'X', xsk: '1' } }));
    const indexed = await doc.send(
      new QueryCommand({
        TableName: TABLE,
        IndexName: 'gsix',
        KeyConditionExpression: 'xpk = :p',
        ExpressionAttributeValues: { ':p': 'X' },
      }),
    );
    return { first, second, got, pages, indexed: indexed.Items };
  } finally {
    raw.destroy();
  }
}

const ANSWERS = {
  first: ['ok', 'ok', 'ok'],
  second: ['DuplicateItem', 'ValidationError', 'ok'],
  got: { pk: 'P', sk: 'a', v: '1' },
  pages: [['a', 'b', 'c'], ['d']],
  indexed: [{ pk: 'Q', sk: '1', xpk: 'X', xsk: '1' }],
};

/**
 * What DynamoDB Local answers, with a database file in `dir` (as `npm start` runs it) or in memory,
 * and what became of its launcher's patch (`sqliteSettingsSource`: a stand-in for the patch's source).
 */
async function answersOf(dir: string | null, sqliteSettingsSource?: string) {
  const dynamo = await startDynamo(
    await freePort(),
    dir,
    sqliteSettingsSource ? { sqliteSettingsSource } : {},
  );
  try {
    return { answers: await exercise(dynamo.endpoint), patch: dynamo.sqliteSettings };
  } finally {
    await dynamo.stop();
  }
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tocsin-ddb-'));
  dirs.push(dir);
  return dir;
}

/** A stand-in for the patch's source (its class as the launcher calls it), in a directory of its own. */
function patchSource(body: string): string {
  const file = join(tempDir(), 'SqliteSettings.java');
  writeFileSync(file, body);
  return file;
}

describe('DynamoDB Local as the stack starts it', () => {
  it('answers as DynamoDB does, its table in a file in write-ahead-log mode (set from outside), its patch applied', async () => {
    // Arrange
    const dir = tempDir();

    // Act
    const { answers, patch } = await answersOf(dir);
    const db = new DatabaseSync(join(dir, 'shared-local-instance.db'), { readOnly: true });
    const mode = db.prepare('PRAGMA journal_mode').get();
    db.close();

    // Assert
    expect(answers).toEqual(ANSWERS);
    expect(mode).toEqual({ journal_mode: 'wal' });
    expect(patch).toBe('applied');
  });

  it('answers the same in memory (the test suites), where the patch has nothing to do', async () => {
    expect(await answersOf(null)).toEqual({ answers: ANSWERS, patch: undefined });
  });
});

describe("the launcher's patch, compiled on its own", () => {
  it('costs only itself when it does not compile (a release whose classes moved)', async () => {
    // Arrange: a patch naming a class this release does not have
    const source = patchSource(
      'import com.almworks.sqlite4java.NoSuchClass;\npublic final class SqliteSettings {\n  public static String applyWhenOpened(Object server) { return String.valueOf(NoSuchClass.class); }\n}\n',
    );

    // Act
    const { answers, patch } = await answersOf(tempDir(), source);

    // Assert
    expect(patch).toBe('not applied');
    expect(answers).toEqual(ANSWERS);
  });

  it('costs only itself when it does not find what it changes (its target gone)', async () => {
    // Arrange: a patch that finds no database connection, as on a release that keeps them elsewhere
    const source = patchSource(
      'public final class SqliteSettings {\n  public static String applyWhenOpened(Object server) {\n    throw new IllegalStateException("no database connection found");\n  }\n}\n',
    );

    // Act
    const { answers, patch } = await answersOf(tempDir(), source);

    // Assert
    expect(patch).toBe('not applied');
    expect(answers).toEqual(ANSWERS);
  });
});
