import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { isAlive } from '../../shared/local/java.ts';
import { projectRoot } from '../../shared/local/paths.ts';
import type { LocalStackState } from '../../shared/local/stack.ts';

/**
 * A real local stack in a child process, started as `npm start` starts it (one node process with the
 * tsx loader running shared/local/start.ts), for the tests that stop, kill and restart it. Not a
 * test file: the local-*.test.ts suites share it.
 */
const execFileP = promisify(execFile);

export interface ChildStack extends LocalStackState {
  child: ChildProcess;
  /** Everything the stack printed so far. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Messages the start requeued because the previous run held them in flight. */
  released: number;
}

export interface ChildStackOptions {
  dataDir: string;
  stateFile: string;
  env?: Record<string, string>;
}

/** The environment of the test worker minus what points at the shared test stack. */
export function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of [
    'TABLE_NAME',
    'DYNAMODB_ENDPOINT',
    'SQS_ENDPOINT',
    'ALARM_QUEUE_URL',
    'WEBHOOK_QUEUE_URL',
    'NOTIFY_QUEUE_URL',
    'REPLAY_QUEUE_URL',
    'SEAL_KEY',
    'BLOCK_PRIVATE_WEBHOOKS',
    // The shared stack's log file: a child stack prints its own.
    'TOCSIN_LOG_FILE',
    // Where the shared stack's claim links lead: a child stack's lead to itself.
    'PUBLIC_BASE_URL',
  ])
    delete env[k];
  return env;
}

export async function startChildStack(opts: ChildStackOptions): Promise<ChildStack> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'shared/local/start.ts'], {
    cwd: projectRoot,
    env: {
      ...baseEnv(),
      PORT: '0',
      DATA_DIR: opts.dataDir,
      TOCSIN_STATE_FILE: opts.stateFile,
      LOG_LEVEL: 'ERROR',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += String(d);
  });
  child.stderr?.on('data', (d) => {
    out += String(d);
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let exitCode: number | null | undefined;
  void exited.then((c) => {
    exitCode = c;
  });
  const deadline = Date.now() + 45_000;
  while (!/ready in/.test(out)) {
    if (exitCode !== undefined)
      throw new Error(`local stack exited (${exitCode}) at start:\n${out.slice(-2000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`local stack did not start within 45 s:\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const state = JSON.parse(readFileSync(opts.stateFile, 'utf8')) as LocalStackState;
  const released = Number(/(\d+) message\(s\) its consumers held requeued/.exec(out)?.[1] ?? 0);
  return { ...state, child, output: () => out, exited, released };
}

/** Waits until a process has ended (a zombie counts as ended); false after `timeoutMs`. */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** `npm run admin -- ...` as a user runs it next to `npm start`, finding the stack through TOCSIN_STATE_FILE. */
export async function admin(stateFile: string, ...args: string[]) {
  try {
    const out = await execFileP(process.execPath, ['--import', 'tsx', 'shared/local/admin.ts', ...args], {
      cwd: projectRoot,
      env: { ...baseEnv(), TOCSIN_STATE_FILE: stateFile },
    });
    return { code: 0, stdout: out.stdout, stderr: out.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export interface App {
  id: number;
  token: string;
}

/** Creates an app through the admin command and returns its id and token. */
export async function createApp(stateFile: string): Promise<App> {
  const res = await admin(stateFile, 'app', 'create', `app-${randomUUID().slice(0, 8)}`);
  const id = Number(/id:\s+(\d+)/.exec(res.stdout)?.[1]);
  const token = /token:\s+([0-9a-f]{40})/.exec(res.stdout)?.[1];
  if (res.code !== 0 || !id || !token) throw new Error(`app create failed: ${res.code} ${res.stderr}`);
  return { id, token };
}

export interface Task {
  id: number;
  token: string;
}

/** Asks for a task whose only receiver is a webhook, signed with the app (API guide §3.1); returns the answer. */
export function requestWebhookTask(
  url: string,
  app: App,
  webhook: string,
): Promise<{ code: number; msg: string; task?: Task }> {
  return requestTask(url, app, { webhook });
}

/**
 * Asks for a task with these receiver channels (and the other fields of `more`), signed with the app
 * (API guide §3.1); returns the answer.
 */
export async function requestTask(
  url: string,
  app: App,
  channels: Record<string, unknown>,
  more: Record<string, unknown> = {},
): Promise<{ code: number; msg: string; task?: Task }> {
  const ts = Math.floor(Date.now() / 1000);
  const res = await fetch(`${url}/alarmtask/store`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-app-id': String(app.id),
      'x-app-timestamp': String(ts),
      'x-app-sign': hmacSign(app.token, app.id, ts),
    },
    body: JSON.stringify({
      name: `crash-${randomUUID().slice(0, 12)}`,
      created_by: 1,
      department_id: 1,
      flag_save_db: 1,
      receiver: { channels },
      ...more,
    }),
  });
  const body = (await res.json()) as { code: number; msg: string; data?: { task?: Task } };
  const task = body.data?.task;
  return { code: body.code, msg: body.msg, task: task ? { id: task.id, token: task.token } : undefined };
}

/** Creates a task whose only receiver is a webhook; fails when the service refuses it. */
export async function createWebhookTask(url: string, app: App, webhook: string): Promise<Task> {
  const res = await requestWebhookTask(url, app, webhook);
  if (res.code !== 0 || !res.task) throw new Error(`task create refused: ${res.code} ${res.msg}`);
  return res.task;
}

export interface ReportResult {
  /** When the request was started (client clock, ms). */
  sentAt: number;
  /** The envelope code, or undefined when no answer came (connection refused or cut). */
  code?: number;
  uuid?: string;
}

/** POST /alarm/report as an alarm SDK sends it (API guide §7.1). */
export async function reportAlarm(
  url: string,
  task: Task,
  ctn: Record<string, unknown>,
): Promise<ReportResult> {
  const sentAt = Date.now();
  const ts = Math.floor(sentAt / 1000);
  try {
    const res = await fetch(`${url}/alarm/report`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ taskid: task.id, timestamp: ts, sign: hmacSign(task.token, task.id, ts), ctn }),
      signal: AbortSignal.timeout(15_000),
    });
    const body = (await res.json()) as { code: number; data?: { uuid?: string } };
    return { sentAt, code: body.code, uuid: body.data?.uuid };
  } catch {
    return { sentAt };
  }
}

/**
 * Reports alarms from `concurrency` loops until `stop()`; every answer is kept. Loops pause briefly
 * after a failed request so a stopped stack is not hammered.
 */
export function loadGenerator(url: () => string, task: Task, concurrency: number) {
  const results: ReportResult[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      const r = await reportAlarm(url(), task, { host: 'crash-test', seq: n++ });
      results.push(r);
      if (r.code === undefined) await new Promise((res) => setTimeout(res, 20));
    }
  });
  return {
    results,
    accepted: () => results.filter((r) => r.code === 0 && r.uuid).map((r) => r.uuid as string),
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
