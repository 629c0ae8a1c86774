import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../shared/local/java.ts';
import { projectRoot } from '../../shared/local/paths.ts';
import type { LocalStackState } from '../../shared/local/stack.ts';
import { admin, baseEnv, createApp, requestWebhookTask, waitGone } from './local-child-stack.ts';

/**
 * Signals reach the stack however `npm start` is ended: SIGTERM or SIGINT to npm (npm passes them on
 * to the node process it execs), Ctrl-C (SIGINT to the whole process group: node gets it from the
 * terminal and from npm, and stops once), and kill -9 of npm (no signal reaches node: it sees its
 * parent gone). Each time node and DynamoDB Local's JVM end after a clean stop, and the data stays.
 */
/** Bound on a clean stop on a busy machine (the stop itself waits for batches and requests in flight). */
const GONE_WITHIN_MS = 45_000;

interface NpmStack {
  npm: ChildProcess;
  dir: string;
  dataDir: string;
  stateFile: string;
  state: LocalStackState;
  output(): string;
  /** Resolves once npm and every process sharing its output (node) have closed it. */
  closed: Promise<unknown>;
}

const dirs: string[] = [];
const pids: number[] = [];

afterEach(async () => {
  for (const pid of pids.splice(0)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * `npm start` as a user runs it, in a process group of its own (as a terminal's job is). Resolves
 * once it is ready, or with `ready: false` as soon as its start is under way (its data directory
 * locked; only node's pid is known then).
 */
async function npmStart(
  dir = mkdtempSync(join(tmpdir(), 'tocsin-signals-')),
  opts: { ready: boolean } = { ready: true },
): Promise<NpmStack> {
  if (!dirs.includes(dir)) dirs.push(dir);
  const dataDir = join(dir, 'data');
  const stateFile = join(dir, 'state.json');
  const npm = spawn('npm', ['start'], {
    cwd: projectRoot,
    env: { ...baseEnv(), PORT: '0', DATA_DIR: dataDir, TOCSIN_STATE_FILE: stateFile, LOG_LEVEL: 'ERROR' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  if (npm.pid) pids.push(npm.pid);
  const closed = once(npm, 'close');
  let out = '';
  npm.stdout?.on('data', (d) => {
    out += String(d);
  });
  npm.stderr?.on('data', (d) => {
    out += String(d);
  });
  const deadline = Date.now() + 90_000;
  /** The node process holding the data directory's lock (written as the start begins). */
  const locker = () => {
    try {
      return (JSON.parse(readFileSync(join(dataDir, 'stack.lock'), 'utf8')) as { pid: number }).pid;
    } catch {
      return undefined;
    }
  };
  while (opts.ready ? !/ready in/.test(out) : !locker()) {
    if (npm.exitCode !== null || Date.now() > deadline)
      throw new Error(`npm start did not start:\n${out.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, opts.ready ? 100 : 10));
  }
  const state = opts.ready
    ? (JSON.parse(readFileSync(stateFile, 'utf8')) as LocalStackState)
    : ({ pid: locker() } as LocalStackState);
  pids.push(state.pid, ...(state.javaPid ? [state.javaPid] : []));
  return { npm, dir, dataDir, stateFile, state, output: () => out, closed };
}

/** Waits for npm, node and the JVM to end (each bounded); then for their output to be read. */
async function ended(s: NpmStack): Promise<boolean[]> {
  const gone = [
    await waitGone(s.npm.pid as number, GONE_WITHIN_MS),
    await waitGone(s.state.pid, GONE_WITHIN_MS),
    await waitGone(s.state.javaPid, GONE_WITHIN_MS),
  ];
  if (gone.every(Boolean)) await s.closed;
  return gone;
}

const ways: [string, (npm: ChildProcess) => void][] = [
  ['SIGTERM to npm (kill <npm pid>)', (npm) => npm.kill('SIGTERM')],
  ['SIGINT to npm', (npm) => npm.kill('SIGINT')],
  ['Ctrl-C (SIGINT to the process group)', (npm) => process.kill(-(npm.pid as number), 'SIGINT')],
];

describe('npm start ends with npm', () => {
  it.each(ways)(
    '%s: node and the JVM stop cleanly',
    async (_, end) => {
      // Arrange
      const s = await npmStart();
      expect(s.state.pid).not.toBe(s.npm.pid);

      // Act
      end(s.npm);

      // Assert: all three processes end, after the stop that loses nothing (its last stage), once
      expect(await ended(s)).toEqual([true, true, true]);
      expect(s.output()).toMatch(/SIGINT|SIGTERM/);
      expect(s.output()).toMatch(/stopping \.\.\.\n(.*\n)* {2}dynamodb: stopped/);
      expect(s.output()).not.toMatch(/again: exiting now/);
      expect(existsSync(join(s.dataDir, 'stack.lock'))).toBe(false);
    },
    180_000,
  );

  it('SIGTERM during the start: the stack stops cleanly as soon as it is up, never ready', async () => {
    // Arrange: the start is under way (its data directory locked), not finished
    const s = await npmStart(undefined, { ready: false });

    // Act
    s.npm.kill('SIGTERM');

    // Assert: npm and node end after the whole clean stop, and the stack never said it was ready
    const gone = [
      await waitGone(s.npm.pid as number, GONE_WITHIN_MS),
      await waitGone(s.state.pid, GONE_WITHIN_MS),
    ];
    expect(gone).toEqual([true, true]);
    await s.closed;
    expect(s.output()).toMatch(/SIGTERM: stopping \.\.\.\n(.*\n)* {2}dynamodb: stopped/);
    expect(s.output()).not.toMatch(/ready in/);
    expect(existsSync(join(s.dataDir, 'stack.lock'))).toBe(false);
  }, 180_000);

  it('kill -9 of npm: node and the JVM stop cleanly, and the data stays', async () => {
    // Arrange: a stack with a directory, an app and a task
    const s = await npmStart();
    const imported = await admin(s.stateFile, 'import', 'test/fixtures/directory.json');
    expect(imported.code, imported.stderr).toBe(0);
    const task = await requestWebhookTask(
      s.state.url,
      await createApp(s.stateFile),
      'http://127.0.0.1:9/hook',
    );
    expect(task.code).toBe(0);

    // Act: kill -9 of npm, then `npm start` on the same data directory
    s.npm.kill('SIGKILL');
    const gone = await ended(s);
    const again = await npmStart(s.dir);
    const tasks = await admin(s.stateFile, 'tasks', '--json');
    again.npm.kill('SIGTERM');
    const againGone = await ended(again);

    // Assert: node and the JVM ended after a clean stop (node saw its parent gone), and the data is there
    expect(gone).toEqual([true, true, true]);
    expect(s.output()).toMatch(/parent process gone: stopping \.\.\.\n(.*\n)* {2}dynamodb: stopped/);
    expect(again.output()).not.toMatch(/did not stop cleanly/);
    expect(tasks.code, tasks.stderr).toBe(0);
    expect(JSON.parse(tasks.stdout).tasks.map((t: { id: number }) => t.id)).toContain(task.task?.id);
    expect(againGone).toEqual([true, true, true]);
  }, 300_000);
});
