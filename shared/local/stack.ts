import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type Server } from 'node:net';
import { resolve } from 'node:path';
import type { QueueName } from '../contracts/messages.ts';
import { queues, schedule } from '../../infra/consumers.ts';
import { asFunction } from './call-record.ts';
import { shareClock } from '../clock.ts';
import { resetConfig } from '../config/env.ts';
import { logger } from '../log.ts';
import { ensureTable, localDynamoClient, startDynamo } from './dynamo.ts';
import { startHttpServer } from './http-server.ts';
import { isAlive, reapJvm } from './java.ts';
import { lambdaContext, loadHandler } from './lambda.ts';
import { defaultStateFile, LOOPBACK, projectRoot } from './paths.ts';
import { startConsumers } from './consumers.ts';
import { reapSqsEmulator, sqsDataDir, startQueues } from './queues.ts';
import { useLocalPlatform } from './platform.ts';
import { mergeStats, takeStats } from './stats.ts';
import { installTerminalLog } from './terminal-log.ts';

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
  /** Concurrent batches per queue when it is quiet (default 5, as Lambda's SQS event source starts). */
  pollers?: number;
  /** The most concurrent batches per queue while it is busy (default 20). */
  maxPollers?: number;
  /** How long a partial batch is topped up before its consumer runs, ms (default 80). */
  batchWindowMs?: number;
  /**
   * Concurrent batches of a queue's consumer, fixed (no scaling from `pollers` to `maxPollers`): the
   * local stand-in for an event source's maximum concurrency on AWS, e.g. `{ alarm: 8 }`.
   */
  concurrency?: Partial<Record<QueueName, number>>;
  /**
   * The address the links in messages lead to (PUBLIC_BASE_URL); default the stack's own,
   * `http://127.0.0.1:<port><BASE_PATH>`.
   */
  publicBaseUrl?: string;
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
  /** The SQS emulator's process. */
  sqsPid: number;
}

export interface LocalStack extends LocalStackState {
  /**
   * Messages the consumers of a previous run on the same data directory held when it ended without a
   * clean stop, made visible again (none after a clean stop).
   */
  released: number;
  /**
   * Stops everything in an order that loses nothing (HTTP, pollers, schedule, SQS, DynamoDB);
   * `report` hears each stage as it ends (the HTTP stage with when it stopped accepting).
   */
  stop(report?: (stage: string, detail?: { cut: number; at: number }) => void): Promise<void>;
  /** CPU the stack has used so far (stackCpu). */
  cpu(): StackCpu;
}

/**
 * CPU seconds used by a local stack's processes since they started (Linux, from /proc): the service's
 * own process (the API thread, the consumer threads, the schedule) and each emulator's apart, DynamoDB
 * Local's JVM and the SQS emulator. Performance targets hold for the service; the emulators stand in
 * for AWS services, whose cost is counted in calls and capacity units instead. Works from any
 * process, given the stack's state file.
 */
export interface StackCpu {
  service: number;
  emulators: { dynamodb: number; sqs: number };
}

export function stackCpu(state: Pick<LocalStackState, 'pid' | 'javaPid' | 'sqsPid'>): StackCpu {
  return {
    service: cpuSecondsOf(state.pid),
    emulators: { dynamodb: cpuSecondsOf(state.javaPid), sqs: cpuSecondsOf(state.sqsPid) },
  };
}

/** CPU seconds a process has used (all its threads; user and system), or 0 once it is gone. */
function cpuSecondsOf(pid: number): number {
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; utime and stime are fields 14 and 15, in clock ticks.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux whatever the kernel's HZ). */
const CLOCK_TICKS = 100;

export const TABLE_NAME = 'tocsin';
const REGION = 'us-east-1';

/** How long a stop waits for HTTP requests in flight. */
const HTTP_GRACE_MS = 10_000;
/** How long a stop waits for the pollers' batches in flight: the longest consumer timeout, and a margin. */
const POLLER_GRACE_MS = Math.max(...queues.map((q) => q.timeoutSeconds)) * 1000 + 5_000;
/** How long a stop waits for a scheduled run in flight (its Lambda timeout). */
const SCHEDULE_GRACE_MS = schedule.timeoutSeconds * 1000;

async function freePort(): Promise<number> {
  const srv: Server = createNetServer();
  await new Promise<void>((r) => srv.listen(0, LOOPBACK, () => r()));
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
  let old: Partial<LocalStackState> = {};
  try {
    old = JSON.parse(readFileSync(stateFile, 'utf8')) as Partial<LocalStackState>;
  } catch {
    // unreadable: a crash while writing it
  }
  if (old.pid !== process.pid && isAlive(old.pid)) {
    throw new Error(`a local stack is already running (pid ${old.pid}, ${old.url})`);
  }
  reapJvm(old.javaPid);
  reapSqsEmulator(old.sqsPid);
  rmSync(stateFile, { force: true });
}

interface DataDirLock {
  pid: number;
  javaPid?: number;
  sqsPid?: number;
}

interface HeldDataDir {
  /** The previous run on the directory stopped cleanly (it removed its lock): its consumers held nothing. */
  cleanBefore: boolean;
  update(lock: DataDirLock): void;
  release(): void;
}

/**
 * One stack per data directory: two would share DynamoDB Local's and fauxqs's files, and a start
 * treats the messages left in flight as abandoned, which holds only when their consumers are gone. A
 * lock left by a stack that died is taken over (and its JVM, if still there, killed). A clean stop
 * removes the lock, so a lock found at start means the previous run did not stop cleanly.
 */
function lockDataDir(dataDir: string): HeldDataDir {
  const file = resolve(dataDir, 'stack.lock');
  const write = (lock: DataDirLock, flag: 'wx' | 'w') =>
    writeFileSync(file, JSON.stringify(lock), { flag, mode: 0o600 });
  let cleanBefore = true;
  try {
    write({ pid: process.pid }, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    let old: Partial<DataDirLock> = {};
    try {
      old = JSON.parse(readFileSync(file, 'utf8')) as Partial<DataDirLock>;
    } catch {
      // a crash while writing it
    }
    if (old.pid !== process.pid && isAlive(old.pid)) {
      throw new Error(
        `${dataDir} is in use by another local stack (pid ${old.pid}); stop it or use another DATA_DIR`,
      );
    }
    reapJvm(old.javaPid);
    reapSqsEmulator(old.sqsPid);
    write({ pid: process.pid }, 'w');
    cleanBefore = false;
  }
  return {
    cleanBefore,
    update: (lock) => write(lock, 'w'),
    release: () => rmSync(file, { force: true }),
  };
}

interface StopStep {
  stage: string;
  run: () => Promise<void>;
}

/** Resolves when `work` settles or after `ms`, whichever comes first; true when `work` finished. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return done;
}

/**
 * Brings up the whole service on this machine: DynamoDB Local with the stack's table, the SQS
 * emulator with the stack's queues and DLQs, the HTTP API on the route table, the queue pollers and
 * the one-minute schedule. Everything runs the same handlers the CDK stack deploys, and every
 * listener binds 127.0.0.1 only.
 *
 * With a data directory, the table and the queues (messages included) persist there and a restart
 * picks up where the previous run stopped, even after a crash. `stop()` loses nothing: it stops
 * accepting HTTP and finishes the requests in flight, then stops the pollers after their batches in
 * flight, then the schedule, then the SQS emulator, then DynamoDB Local.
 */
export async function startLocalStack(opts: LocalStackOptions = {}): Promise<LocalStack> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  // The API thread's handlers run on the local adapter (each consumer thread installs its own).
  useLocalPlatform();
  const dataDirOpt = opts.dataDir ?? './.data';
  const dataDir = dataDirOpt === ':memory:' ? null : resolve(projectRoot, dataDirOpt);
  if (dataDir) mkdirSync(resolve(dataDir, 'dynamodb'), { recursive: true });
  const stateFile = opts.stateFile === undefined ? defaultStateFile : opts.stateFile;
  if (stateFile) reapStale(stateFile);
  const lock = dataDir ? lockDataDir(dataDir) : undefined;

  // The stop sequence, built up as parts start; run front to back. The lock goes only when the pollers
  // finished their batches: else the next start must release what they held (a lock without a JVM).
  let drained = true;
  const stopAll: StopStep[] = [
    { stage: 'lock', run: async () => (drained ? lock?.release() : lock?.update({ pid: process.pid })) },
  ];
  try {
    const [dynamoPort, sqsPort] = [await freePort(), await freePort()];
    // The API's port is known before anything starts: the links the consumers send point at it.
    const apiPort = opts.port === 0 ? await freePort() : (opts.port ?? 3000);
    const basePath = (process.env.BASE_PATH ?? '/').replace(/\/+$/, '');
    const [dynamoStart, sqsStart] = await Promise.allSettled([
      startDynamo(dynamoPort, dataDir ? resolve(dataDir, 'dynamodb') : null),
      startQueues(sqsPort, REGION, dataDir ? sqsDataDir(dataDir) : null, {
        release: !lock?.cleanBefore,
        journal: process.env.TOCSIN_QUEUE_LOG || undefined,
      }),
    ]);
    if (dynamoStart.status === 'rejected' || sqsStart.status === 'rejected') {
      if (dynamoStart.status === 'fulfilled') await dynamoStart.value.stop();
      if (sqsStart.status === 'fulfilled') await sqsStart.value.stop();
      throw dynamoStart.status === 'rejected'
        ? dynamoStart.reason
        : (sqsStart as PromiseRejectedResult).reason;
    }
    const [dynamo, sqs] = [dynamoStart.value, sqsStart.value];
    lock?.update({ pid: process.pid, javaPid: dynamo.pid, sqsPid: sqs.pid });
    // Stopped last: the emulators outlive everything that uses them.
    stopAll.unshift({ stage: 'sqs', run: () => sqs.stop() }, { stage: 'dynamodb', run: () => dynamo.stop() });
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
      REPLAY_QUEUE_URL: sqs.urls.replay,
      ALARM_DLQ_URL: sqs.dlqUrls.alarm,
      WEBHOOK_DLQ_URL: sqs.dlqUrls.webhook,
      NOTIFY_DLQ_URL: sqs.dlqUrls.notify,
      REPLAY_DLQ_URL: sqs.dlqUrls.replay,
      SEAL_KEY: sealKey,
      TOCSIN_LOCAL: '1',
      // Local webhook receivers usually live on this machine: the private-address guard is off
      // unless the environment turns it on (BLOCK_PRIVATE_WEBHOOKS=1 npm start).
      BLOCK_PRIVATE_WEBHOOKS: process.env.BLOCK_PRIVATE_WEBHOOKS || '0',
      ENV_NAME: process.env.ENV_NAME ?? 'local',
      // Claim links in the messages lead to this stack, unless told otherwise.
      PUBLIC_BASE_URL: opts.publicBaseUrl || `http://${LOOPBACK}:${apiPort}${basePath}`,
      ...opts.env,
    });
    resetConfig();
    installTerminalLog();

    // Consumers before the API: an alarm accepted at once is processed at once. Every thread of the
    // stack shares the clock (the test clock moves for the consumers too).
    const clock = new SharedArrayBuffer(8);
    shareClock(clock);
    const min = opts.pollers ?? 5;
    const consumers = await startConsumers({
      endpoint: sqs.endpoint,
      urls: sqs.urls,
      region: REGION,
      clock,
      scale: { min, max: Math.max(min, opts.maxPollers ?? 20), windowMs: opts.batchWindowMs ?? 80 },
      concurrency: opts.concurrency,
    });
    let scheduleStop: (() => Promise<void>) | undefined;
    if (opts.schedule !== false) scheduleStop = startSchedule();
    stopAll.unshift(
      {
        stage: 'pollers',
        run: async () => {
          drained = false;
          const stopped = consumers.stop().then(
            () => true,
            (err) => {
              logger.warn('local pollers failed to stop', { error: err as Error });
              return false;
            },
          );
          drained = (await within(stopped, POLLER_GRACE_MS)) && (await stopped);
          if (!drained)
            logger.warn('local pollers did not finish in time; their messages return at the next start');
        },
      },
      {
        stage: 'schedule',
        run: async () => {
          if (scheduleStop && !(await within(scheduleStop(), SCHEDULE_GRACE_MS)))
            logger.warn('the scheduled run did not finish in time');
        },
      },
    );

    const http = await startHttpServer(apiPort, process.env.BASE_PATH ?? '/', {
      stats: async (reset) => mergeStats([takeStats(reset), ...(await consumers.stats(reset))]),
    });
    let httpStop: { cut: number; at: number } | undefined;
    stopAll.unshift({
      stage: 'http',
      run: async () => {
        httpStop = await http.stopAccepting(HTTP_GRACE_MS);
      },
    });

    const state: LocalStackState = {
      pid: process.pid,
      url: `http://${LOOPBACK}:${http.port}`,
      region: REGION,
      tableName: TABLE_NAME,
      dynamoEndpoint: dynamo.endpoint,
      sqsEndpoint: sqs.endpoint,
      queueUrls: sqs.urls,
      dlqUrls: sqs.dlqUrls,
      sealKey,
      javaPid: dynamo.pid,
      sqsPid: sqs.pid,
    };
    if (stateFile) {
      writeFileSync(stateFile, JSON.stringify(state, null, 2), { mode: 0o600 });
      stopAll.push({ stage: 'state', run: async () => rmSync(stateFile, { force: true }) });
    }

    let stopped: Promise<void> | undefined;
    return {
      ...state,
      released: sqs.released,
      cpu: () => stackCpu(state),
      stop(report) {
        stopped ??= (async () => {
          for (const step of stopAll) {
            await step
              .run()
              .catch((err) =>
                logger.warn('local stack stop step failed', { stage: step.stage, error: err as Error }),
              );
            report?.(step.stage, step.stage === 'http' ? httpStop : undefined);
          }
        })();
        return stopped;
      },
    };
  } catch (err) {
    for (const step of stopAll) await step.run().catch(() => undefined);
    throw err;
  }
}

/** The one-minute EventBridge rule: runs the scheduled function; returns a stop that awaits a run in flight. */
function startSchedule(): () => Promise<void> {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = (async () => {
      try {
        const run = await loadHandler(schedule.handler);
        await asFunction('schedule', () =>
          run({ source: 'aws.events', 'detail-type': 'Scheduled Event' }, lambdaContext('tocsin-schedule')),
        );
      } catch (err) {
        logger.error('scheduled function failed', { error: err as Error });
      } finally {
        running = undefined;
      }
    })();
  }, schedule.rateMinutes * 60_000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
