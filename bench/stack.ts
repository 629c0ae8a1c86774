import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { hmacSign } from '../shared/domain/auth/signature.ts';
import { type LocalStackState, type StackCpu, stackCpu } from '../shared/local/stack.ts';
import type { Stats } from '../shared/local/stats.ts';

/**
 * The stack under test, as `npm start` runs it: a child process (the API thread, a consumer thread
 * per queue, the SQS emulator, DynamoDB Local's JVM) with TOCSIN_STATS=1, so it counts its DynamoDB
 * and SQS calls (`/_local/stats`); its CPU is read from its processes (the stack's `stackCpu`: the
 * service's own process apart from each emulator's). This
 * process is the outside world: the load generator and the receivers.
 */

const root = resolve(import.meta.dirname, '..');
/** The app the benchmark signs its API calls with (seeded like `npm run admin -- import` would). */
const APP = { id: 900001, token: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678' };

export interface TaskRef {
  id: number;
  token: string;
}

/** What a stack spent between two CPU readings. */
export function cpuSpent(before: StackCpu, after: StackCpu): StackCpu {
  return {
    service: after.service - before.service,
    emulators: {
      dynamodb: after.emulators.dynamodb - before.emulators.dynamodb,
      sqs: after.emulators.sqs - before.emulators.sqs,
    },
  };
}

export class BenchStack {
  private sqsClient: SQSClient;

  private constructor(
    readonly state: LocalStackState,
    private readonly child: ChildProcess,
    private readonly dir: string,
  ) {
    this.sqsClient = new SQSClient({
      endpoint: state.sqsEndpoint,
      region: state.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  }

  get url(): string {
    return this.state.url;
  }

  /**
   * Starts the stack (`data`: disk as npm start, or memory) with `env` added to its environment.
   * BENCH_STACK_NODE_ARGS adds node options to it (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
   */
  static async start(data: string, env: Record<string, string>): Promise<BenchStack> {
    const dir = mkdtempSync(join(tmpdir(), 'tocsin-bench-'));
    const stateFile = join(dir, 'state.json');
    const extra = (process.env.BENCH_STACK_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...extra, '--import', 'tsx', 'shared/local/start.ts'], {
      cwd: root,
      env: {
        ...process.env,
        PORT: '0',
        DATA_DIR: data === 'memory' ? ':memory:' : join(dir, 'data'),
        TOCSIN_STATE_FILE: stateFile,
        TOCSIN_STATS: '1',
        LOG_LEVEL: 'ERROR',
        ALARM_RATE_LIMIT: '1000000',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout?.resume();
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const state = JSON.parse(readFileSync(stateFile, 'utf8')) as LocalStackState;
        return new BenchStack(state, child, dir);
      } catch {
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error('the local stack did not start');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** Loads the directory and the app the load signs with, as `npm run admin -- import` would. */
  async seed(): Promise<void> {
    Object.assign(process.env, {
      TABLE_NAME: this.state.tableName,
      AWS_REGION: this.state.region,
      DYNAMODB_ENDPOINT: this.state.dynamoEndpoint,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      SEAL_KEY: this.state.sealKey,
      BLOCK_PRIVATE_WEBHOOKS: '0',
      LOG_LEVEL: 'ERROR',
    });
    const { seedTestDirectory } = await import('../test/support/seed.ts');
    await seedTestDirectory();
  }

  async stop(): Promise<void> {
    this.sqsClient.destroy();
    if (this.child.exitCode === null) {
      this.child.kill('SIGTERM');
      await new Promise((r) => this.child.once('exit', r));
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** An app-signed API call; its `data`, or an error naming the code. */
  async api<T>(method: string, path: string, body: unknown): Promise<T> {
    const ts = Math.floor(Date.now() / 1000);
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        'x-app-id': String(APP.id),
        'x-app-timestamp': String(ts),
        'x-app-sign': hmacSign(APP.token, APP.id, ts),
      },
      body: JSON.stringify(body),
    });
    const env = (await res.json()) as { code: number; msg: string; data: T };
    if (env.code !== 0) throw new Error(`${method} ${path}: ${env.code} ${env.msg}`);
    return env.data;
  }

  /** A new task with these settings (`receiver.channels` from `channels`). */
  async createTask(channels: Record<string, unknown>, settings: Record<string, unknown> = {}) {
    const data = await this.api<{ task: TaskRef }>('POST', '/alarmtask/store', {
      name: `bench-${Math.random().toString(36).slice(2, 10)}`,
      created_by: 1,
      department_id: 1,
      flag_save_db: 1,
      receiver: { channels },
      ...settings,
    });
    return { id: data.task.id, token: data.task.token };
  }

  /** The stack's DynamoDB and SQS calls and its invocations; `reset` starts counting afresh. */
  async stats(reset = false): Promise<Stats> {
    const res = await fetch(`${this.url}/_local/stats${reset ? '?reset=1' : ''}`);
    return (await res.json()) as Stats;
  }

  /** CPU seconds so far, the service's own process apart from each emulator's. */
  cpu(): StackCpu {
    return stackCpu(this.state);
  }


  /** Messages waiting (visible) on these queues. */
  async queueDepth(names: string[] = ['alarm', 'webhook']): Promise<number> {
    let total = 0;
    for (const q of names) {
      const out = await this.sqsClient.send(
        new GetQueueAttributesCommand({
          QueueUrl: this.state.queueUrls[q],
          AttributeNames: ['ApproximateNumberOfMessages'],
        }),
      );
      total += Number(out.Attributes?.ApproximateNumberOfMessages ?? 0);
    }
    return total;
  }
}
