import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SQSClient } from '@aws-sdk/client-sqs';
import { logger } from '../log.ts';
import { reapLeftover } from './java.ts';
import { withoutSdkLogging } from '../platform.ts';
import { LOOPBACK } from './paths.ts';
import { localEmulatorOptions } from './platform.ts';

export interface LocalQueues {
  endpoint: string;
  urls: Record<string, string>;
  dlqUrls: Record<string, string>;
  /** Messages the consumers of a previous run held when it ended, made visible again at this start. */
  released: number;
  /** The emulator's process. */
  pid: number;
  /** Stops the emulator (its store closed) and waits for its process to end. */
  stop(): Promise<void>;
}

/** The account of the emulator's queue URLs and ARNs. */
export const SQS_ACCOUNT = '000000000000';
/** SQS's largest message, 1 MiB; the CDK stack sets the same on every queue. */
export const MAX_MESSAGE_BYTES = 1_048_576;

/** The URL fauxqs gives a queue on this port (lookups use only the region and the name). */
export const queueUrlOf = (name: string, region: string, port: number) =>
  `http://sqs.${region}.${LOOPBACK}:${port}/${SQS_ACCOUNT}/${name}`;

/** What the stack asks of the emulator's process at its start (see shared/local/fauxqs/emulator.ts). */
export interface EmulatorStart {
  type: 'start';
  port: number;
  region: string;
  dataDir: string | null;
  /** Make visible again what a previous run's consumers held (it did not stop cleanly). */
  release: boolean;
  /** The fauxqs module to run (a file URL); default the installed, patched one. Tests run copies. */
  module?: string;
  /**
   * TOCSIN_QUEUE_LOG: a file the emulator appends every message sent to a queue, and every message
   * moved to a dead-letter queue, to (one JSON line `{queue, status, body}`), for tests that look at
   * everything the queues carried (a consumed message is gone from the emulator). Local runtime only.
   */
  journal?: string;
}

/** The emulator's answer to its start. */
export type EmulatorStarted =
  | {
      type: 'started';
      endpoint: string;
      urls: Record<string, string>;
      dlqUrls: Record<string, string>;
      released: number;
    }
  | { type: 'failed'; message: string };

const EMULATOR = fileURLToPath(new URL('./fauxqs/emulator.ts', import.meta.url));
/** How long a stop waits for the emulator to close its store before it kills the process. */
const STOP_GRACE_MS = 5_000;

/**
 * Starts the SQS emulator on 127.0.0.1 with every queue of the stack and its dead-letter queue, in a
 * process of its own (shared/local/fauxqs/emulator.ts). With a data directory, queues and messages
 * live in SQLite there (fauxqs writes every change through), so what was queued survives a crash; on
 * a restart the queues are reused, not recreated. `release`: the previous run on the data directory
 * did not stop cleanly, so what its consumers held is made visible again. fauxqs runs as patched at
 * install (patches/, described in docs/local-stack.md); `emulator` (a file URL of a fauxqs module)
 * replaces it in tests (a copy with one patch left out).
 */
export async function startQueues(
  port: number,
  region: string,
  dataDir: string | null = null,
  { release = true, emulator, journal }: { release?: boolean; emulator?: string; journal?: string } = {},
): Promise<LocalQueues> {
  const child: ChildProcess = fork(EMULATOR, [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let stopping = false;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      if (!stopping) logger.error('the SQS emulator ended', { code, signal });
      resolve();
    }),
  );
  const answer = await new Promise<EmulatorStarted>((resolve) => {
    const failed = (message: string) => resolve({ type: 'failed', message });
    child.once('message', (m) => resolve(m as EmulatorStarted));
    child.once('exit', (code, signal) => failed(`its process exited (${signal ?? code})`));
    child.once('error', (err) => failed(err.message));
    child.send({ type: 'start', port, region, dataDir, release, module: emulator, journal } satisfies EmulatorStart);
  });
  if (answer.type !== 'started') {
    stopping = true;
    child.kill('SIGKILL');
    await exited;
    throw new Error(`the SQS emulator did not start: ${answer.message}`);
  }
  return {
    endpoint: answer.endpoint,
    urls: answer.urls,
    dlqUrls: answer.dlqUrls,
    released: answer.released,
    pid: child.pid ?? 0,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Kills an SQS emulator a crashed stack left behind (it ends by itself once it sees the stack gone). */
export const reapSqsEmulator = (pid: number | undefined): boolean =>
  reapLeftover(pid, /fauxqs\/emulator\.ts/);

/** Where fauxqs keeps its SQLite database inside the stack's data directory. */
export const sqsDataDir = (dataDir: string) => join(dataDir, 'sqs');

export function localSqsClient(endpoint: string, region: string): SQSClient {
  return withoutSdkLogging(
    new SQSClient({
      region,
      ...localEmulatorOptions(endpoint),
      cacheMiddleware: true,
      // Lambda's event source hands a consumer its messages without an MD5 check; the pollers that
      // stand in for it do not check one either.
      md5: false,
    }),
  );
}
