import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject, describe, expect, it } from 'vitest';
import { getDepartment } from '../../shared/domain/directory/repository.ts';
import { projectRoot } from '../../shared/local/paths.ts';
import { api } from '../support/client.ts';
import { startChildStack, waitGone } from './local-child-stack.ts';

const run = promisify(execFile);
/** As `npm start` / `npm run admin` run them: one node process with the tsx loader (no signal relay). */
const node = (script: string, ...args: string[]) =>
  [process.execPath, ['--import', 'tsx', script, ...args]] as const;

async function admin(...args: string[]) {
  const stateFile = inject('stack').stateFile;
  try {
    const [bin, argv] = node('shared/local/admin.ts', ...args, '--state', stateFile);
    const out = await run(bin, argv, { cwd: projectRoot });
    return { code: 0, stdout: out.stdout, stderr: out.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('npm run admin', () => {
  it('imports the README sample directory file into the running stack', async () => {
    const res = await admin('import', 'events/directory/sample-directory.json');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('imported 2 business_units, 2 departments, 3 users');
    expect((await getDepartment(2))?.pinyin).toBe('rizhizhongxin');
  });

  it('refuses a malformed file with the offending paths and writes nothing', async () => {
    // Arrange
    const file = join(mkdtempSync(join(tmpdir(), 'tocsin-admin-')), 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({
        departments: [{ id: 77, bu_id: 1, name: 'Ghost' }],
        users: [{ uid: 'x' }],
        bogus: [],
      }),
    );
    // Act
    const res = await admin('import', file);
    // Assert
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('bogus: is not a known field');
    expect(res.stderr).toContain('users.0.uid: must be an integer');
    expect(await getDepartment(77)).toBeUndefined();
  });

  it('creates an app whose printed token signs requests', async () => {
    const res = await admin('app', 'create', 'ci-app');
    expect(res.code).toBe(0);
    const id = Number(/id:\s+(\d+)/.exec(res.stdout)?.[1]);
    const token = /token:\s+([0-9a-f]{40})/.exec(res.stdout)?.[1] ?? '';
    expect(token).toHaveLength(40);
    const call = await api.get('/department/simple', { app: { id, token } });
    expect(call.code).toBe(0);
  });
});

describe('npm run admin with TOCSIN_STATE_FILE', () => {
  /** Runs the admin command the way the README shows, the stack found through the environment only. */
  async function adminWithEnv(stateFile: string, ...args: string[]) {
    try {
      const [bin, argv] = node('shared/local/admin.ts', ...args);
      const out = await run(bin, argv, {
        cwd: projectRoot,
        env: { ...process.env, TOCSIN_STATE_FILE: stateFile },
      });
      return { code: 0, stdout: out.stdout, stderr: out.stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it('finds the running stack through the variable (no --state)', async () => {
    // Arrange
    const stateFile = inject('stack').stateFile;
    // Act
    const res = await adminWithEnv(stateFile, 'import', 'events/directory/sample-directory.json');
    // Assert
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('imported 2 business_units, 2 departments, 3 users');
  });

  it('reads the file the variable names, not the default one', async () => {
    // Arrange
    const missing = join(mkdtempSync(join(tmpdir(), 'tocsin-admin-env-')), 'no-such-state.json');
    // Act
    const res = await adminWithEnv(missing, 'app', 'create', 'never');
    // Assert
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`no running local stack (no ${missing})`);
  });
});

describe('npm start', () => {
  it('serves /health within seconds and leaves no process behind on SIGTERM', async () => {
    // Arrange
    const stateFile = join(mkdtempSync(join(tmpdir(), 'tocsin-start-')), 'state.json');
    const [bin, argv] = node('shared/local/start.ts');
    const child = spawn(bin, argv, {
      cwd: projectRoot,
      env: {
        ...process.env,
        PORT: '0',
        DATA_DIR: ':memory:',
        TOCSIN_STATE_FILE: stateFile,
        LOG_LEVEL: 'ERROR',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const deadline = Date.now() + 30_000;
    while (!/API\s+(http:\S+)/.test(out) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const url = /API\s+(http:\S+)/.exec(out)?.[1];

    // Act
    const health = (await (await fetch(`${url}/health`)).json()) as { code: number; msg: string };
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { javaPid: number };
    child.kill('SIGTERM');
    const code = await exited;

    // Assert
    expect(health).toMatchObject({ code: 0, msg: 'ok' });
    expect(code).toBe(0);
    expect(() => process.kill(state.javaPid, 0)).toThrow();
  });

  it('exits at once on a second signal, taking its JVM along', async () => {
    // Arrange: a request in flight (its body never completes) holds the first stop in its HTTP drain
    const dir = mkdtempSync(join(tmpdir(), 'tocsin-force-'));
    const stack = await startChildStack({ dataDir: ':memory:', stateFile: join(dir, 'state.json') });
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(stack.url).port) });
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      'POST /alarm/report HTTP/1.1\r\nhost: local\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{',
    );
    await new Promise((r) => setTimeout(r, 200));

    // Act
    stack.child.kill('SIGTERM');
    while (!stack.output().includes('SIGTERM: stopping')) await new Promise((r) => setTimeout(r, 20));
    stack.child.kill('SIGTERM');
    const code = await stack.exited;
    const javaGone = await waitGone(stack.javaPid, 5_000);
    socket.destroy();
    rmSync(dir, { recursive: true, force: true });

    // Assert
    expect(stack.output()).toContain('SIGTERM again: exiting now');
    expect(code).toBe(130);
    expect(javaGone).toBe(true);
  });
});
