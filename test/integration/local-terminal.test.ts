import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TestReceiver } from '../support/receiver.ts';
import {
  admin,
  type ChildStack,
  createApp,
  reportAlarm,
  requestTask,
  startChildStack,
  waitGone,
} from './local-child-stack.ts';

/**
 * What `npm start` prints while it runs: one readable line per request and per delivery outcome, not
 * the functions' JSON, and never a token, signature or query string.
 */
const dir = mkdtempSync(join(tmpdir(), 'tocsin-terminal-'));
const receiver = new TestReceiver();
let stack: ChildStack | undefined;

afterAll(async () => {
  if (stack && stack.child.exitCode === null && stack.child.signalCode === null) {
    stack.child.kill('SIGTERM');
    await stack.exited;
    await waitGone(stack.javaPid, 5_000);
  }
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the local stack terminal', () => {
  it('prints a line per request and per delivery, masked, and no JSON', async () => {
    // Arrange: a stack at the default log level, the test directory, an app and a task that e-mails
    // uid 1 (no e-mail provider: skipped) and posts to a webhook
    await receiver.start();
    const stateFile = join(dir, 'state.json');
    stack = await startChildStack({ dataDir: join(dir, 'data'), stateFile, env: { LOG_LEVEL: 'INFO' } });
    expect((await admin(stateFile, 'import', 'test/fixtures/directory.json')).code).toBe(0);
    const app = await createApp(stateFile);
    const created = await requestTask(stack.url, app, {
      email: [1],
      webhook: `${receiver.url}/hook?key=hook-secret-1`,
    });
    expect(created.code).toBe(0);
    const task = created.task as { id: number; token: string };
    // Act: a report, and a refused request whose query carries a would-be token
    const report = await reportAlarm(stack.url, task, { host: 'web-1' });
    const refused = await fetch(`${stack.url}/alarm/rawbody?taskid=${task.id}&token=query-secret-2`);
    await receiver.waitFor((all) => all.some((r) => r.json?.event === 'ALARM'));
    const deadline = Date.now() + 15_000;
    while (!/ email uid 1 \S+: \w+/.test(stack.output()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    // Assert
    const out = stack.output();
    expect(report.code).toBe(0);
    expect(refused.status).toBe(401);
    expect(out).toMatch(/^\d\d:\d\d:\d\d POST \/alarmtask\/store 200 \d+ ms code 0$/m);
    expect(out).toMatch(/^\d\d:\d\d:\d\d POST \/alarm\/report 200 \d+ ms code 0$/m);
    expect(out).toMatch(/^\d\d:\d\d:\d\d GET \/alarm\/rawbody 401 \d+ ms code 401$/m);
    // The test's provider fakes stand in for an e-mail provider: delivered, the address masked
    expect(out).toMatch(/^\d\d:\d\d:\d\d email uid 1 an\*+@example\.com: delivered \(\d+\)$/m);
    expect(out).not.toMatch(/^\S+ GET \/_local\/clock/m);
    expect(out).toContain(` webhook ${receiver.url}: delivered (HTTP 200)\n`);
    expect(out).not.toMatch(/^\{"level"/m);
    for (const secret of ['hook-secret-1', 'query-secret-2', task.token, app.token, 'annlee@example.com'])
      expect(out).not.toContain(secret);
  });
});
