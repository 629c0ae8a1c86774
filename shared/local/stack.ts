import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type Server } from 'node:net';
import { resolve } from 'node:path';
import { queues, schedule } from '../../infra/definitions.ts';
import { resetConfig } from '../config/env.ts';
import { logger } from '../log.ts';
import { ensureTable, localDynamoClient, startDynamo } from './dynamo.ts';
import { startHttpServer } from './http-server.ts';
import { lambdaContext, loadHandler } from './lambda.ts';
import { projectRoot } from './paths.ts';
import { localSqsClient, startPoller, startQueues } from './queues.ts';

export interface LocalStackOptions {
  /** HTTP port; 0 picks a free one. */
  port?: number;
  /** Where data persists, or ':memory:'. */
  dataDir?: string;
  /** Extra environment for the handlers (e.g. shorter retry backoffs in tests). */
  env?: Record<string, string>;
  /** Write the state file that `npm run admin` reads (path, or false). */
  stateFile?: string | false;
  /** Run the scheduled function every minute (default true). */
  schedule?: boolean;
  /** Concurrent pollers per queue. */
  pollers?: number;
}

export interface LocalStackState {
  pid: number;
  url: string;
  region: string;
  tableName: string;
  dynamoEndpoint: string;
  sqsEndpoint: string;
  queueUrls: Record<string, string>;
  dlqUrls: Record<string, string>;
  /** base64 seal key, so the admin command can seal app tokens like the service does. */
  sealKey: string;
  javaPid: number;
}

export interface LocalStack extends LocalStackState {
  stop(): Promise<void>;
}

export const TABLE_NAME = 'tocsin';
const REGION = 'us-east-1';

async function freePort(): Promise<number> {
  const srv: Server = createNetServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

function loadOrCreateSealKey(dataDir: string | null): string {
  if (!dataDir) return randomBytes(32).toString('base64');
  const file = resolve(dataDir, 'seal.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, key, { mode: 0o600 });
  return key;
}

/** Kills a DynamoDB Local JVM left behind by a stack that crashed (recorded in its state file). */
function reapStale(stateFile: string) {
  if (!existsSync(stateFile)) return;
  try {
    const old = JSON.parse(readFileSync(stateFile, 'utf8')) as Partial<LocalStackState>;
    const alive = (pid?: number) => {
      if (!pid) return false;
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    if (alive(old.pid)) throw new Error(`a local stack is already running (pid ${old.pid}, ${old.url})`);
    if (alive(old.javaPid)) process.kill(old.javaPid as number, 'SIGKILL');
  } catch (err) {
    if ((err as Error).message.startsWith('a local stack')) throw err;
  }
  rmSync(stateFile, { force: true });
}

/**
 * Brings up the whole service on this machine: DynamoDB Local with the stack's table, the SQS
 * emulator with the stack's queues and DLQs, the HTTP API on the route table, the queue pollers and
 * the one-minute schedule. Everything runs the same handlers the CDK stack deploys.
 */
export async function startLocalStack(opts: LocalStackOptions = {}): Promise<LocalStack> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const dataDirOpt = opts.dataDir ?? './.data';
  const dataDir = dataDirOpt === ':memory:' ? null : resolve(projectRoot, dataDirOpt);
  if (dataDir) mkdirSync(resolve(dataDir, 'dynamodb'), { recursive: true });
  const stateFile = opts.stateFile === undefined ? resolve(projectRoot, '.tocsin-local.json') : opts.stateFile;
  if (stateFile) reapStale(stateFile);

  const [dynamoPort, sqsPort] = [await freePort(), await freePort()];
  const [dynamo, sqs] = await Promise.all([
    startDynamo(dynamoPort, dataDir ? resolve(dataDir, 'dynamodb') : null),
    startQueues(sqsPort, REGION),
  ]);
  const stopAll: (() => Promise<void>)[] = [() => dynamo.stop(), () => sqs.stop()];
  try {
    const ddb = localDynamoClient(dynamo.endpoint, REGION);
    await ensureTable(ddb, TABLE_NAME);
    ddb.destroy();

    const sealKey = loadOrCreateSealKey(dataDir);
    Object.assign(process.env, {
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
      TABLE_NAME,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      SQS_ENDPOINT: sqs.endpoint,
      ALARM_QUEUE_URL: sqs.urls.alarm,
      WEBHOOK_QUEUE_URL: sqs.urls.webhook,
      NOTIFY_QUEUE_URL: sqs.urls.notify,
      SEAL_KEY: sealKey,
      TOCSIN_LOCAL: '1',
      BLOCK_PRIVATE_WEBHOOKS: '0',
      ENV_NAME: process.env.ENV_NAME ?? 'local',
      ...opts.env,
    });
    resetConfig();

    const server = await startHttpServer(opts.port ?? 3000, process.env.BASE_PATH ?? '/');
    stopAll.unshift(() => new Promise<void>((r) => server.close(() => r())));
    server.closeIdleConnections?.();
    const port = (server.address() as { port: number }).port;

    const sqsClient = localSqsClient(sqs.endpoint, REGION);
    const pollers = queues.map((q) => startPoller(sqsClient, q, sqs.urls[q.name], REGION, opts.pollers ?? 2));
    stopAll.unshift(async () => {
      await Promise.all(pollers.map((p) => p.stop()));
      sqsClient.destroy();
    });

    if (opts.schedule !== false) {
      let busy = false;
      const timer = setInterval(async () => {
        if (busy) return;
        busy = true;
        try {
          const run = await loadHandler(schedule.handler);
          await run({ source: 'aws.events', 'detail-type': 'Scheduled Event' }, lambdaContext('tocsin-schedule'));
        } catch (err) {
          logger.error('scheduled function failed', { error: err as Error });
        } finally {
          busy = false;
        }
      }, schedule.rateMinutes * 60_000);
      timer.unref();
      stopAll.unshift(async () => clearInterval(timer));
    }

    const state: LocalStackState = {
      pid: process.pid,
      url: `http://127.0.0.1:${port}`,
      region: REGION,
      tableName: TABLE_NAME,
      dynamoEndpoint: dynamo.endpoint,
      sqsEndpoint: sqs.endpoint,
      queueUrls: sqs.urls,
      dlqUrls: sqs.dlqUrls,
      sealKey,
      javaPid: dynamo.pid,
    };
    if (stateFile) writeFileSync(stateFile, JSON.stringify(state, null, 2), { mode: 0o600 });

    let stopped: Promise<void> | undefined;
    return {
      ...state,
      stop() {
        stopped ??= (async () => {
          for (const s of stopAll) await s().catch(() => undefined);
          if (stateFile) rmSync(stateFile, { force: true });
        })();
        return stopped;
      },
    };
  } catch (err) {
    for (const s of stopAll) await s().catch(() => undefined);
    throw err;
  }
}
