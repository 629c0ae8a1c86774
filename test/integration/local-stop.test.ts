import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Received, TestReceiver } from '../support/receiver.ts';
import {
  admin,
  type ChildStack,
  createApp,
  createWebhookTask,
  reportAlarm,
  startChildStack,
  waitGone,
} from './local-child-stack.ts';

/**
 * A clean stop (SIGTERM, as Ctrl-C or `kill` sends it) leaves nothing in flight: the pollers stop
 * receiving and finish their batches, so the next start on the same data directory has nothing to
 * requeue, and a webhook retry waiting out its backoff keeps it across the restart.
 */
/** The first retry comes soon (it is queued as a delayed message); the second waits in flight. */
const BACKOFF_SECONDS = 30;

const started: ChildStack[] = [];
const dirs: string[] = [];
let receiver: TestReceiver | undefined;

afterEach(async () => {
  for (const s of started.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
    await waitGone(s.javaPid, 5_000);
  }
  await receiver?.stop();
  receiver = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(dir: string): Promise<ChildStack> {
  const s = await startChildStack({
    dataDir: join(dir, 'data'),
    stateFile: join(dir, 'state.json'),
    env: { WEBHOOK_BACKOFF_SECONDS: [1, ...Array(5).fill(BACKOFF_SECONDS)].join(',') },
  });
  started.push(s);
  return s;
}

const alarmAttempts = (all: Received[], uuid: string) =>
  all.filter((r) => r.json?.event === 'ALARM' && r.json.data?.history?.uuid === uuid);

describe('a clean stop of the local stack', () => {
  it('leaves nothing in flight, and a webhook retry keeps its backoff across the restart', async () => {
    // Arrange: a stack whose task's webhook fails an alarm's first two attempts: the first retry is
    // a delayed message, the second waits out its backoff in flight (the consumer's visibility change)
    const dir = mkdtempSync(join(tmpdir(), 'tocsin-stop-'));
    dirs.push(dir);
    const rcv = await new TestReceiver().start();
    receiver = rcv;
    const stack = await start(dir);
    const stateFile = join(dir, 'state.json');
    const imported = await admin(stateFile, 'import', 'test/fixtures/directory.json');
    expect(imported.code, imported.stderr).toBe(0);
    const task = await createWebhookTask(stack.url, await createApp(stateFile), `${rcv.url}/hook`);
    await rcv.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
    rcv.behaviour = (r) => ({
      status:
        r.json?.event === 'ALARM' && alarmAttempts(rcv.received, r.json.data?.history?.uuid).length <= 2
          ? 503
          : 200,
    });
    const report = await reportAlarm(stack.url, task, { host: 'stop-1' });
    expect(report.code).toBe(0);
    const uuid = report.uuid as string;
    await rcv.waitFor((all) => alarmAttempts(all, uuid).length === 2, 30_000);

    // Act: a clean stop while the retry waits out its backoff, then a start on the same data directory
    stack.child.kill('SIGTERM');
    const code = await stack.exited;
    const restarted = await start(dir);
    await rcv.waitFor((all) => alarmAttempts(all, uuid).length === 3, (BACKOFF_SECONDS + 30) * 1000);

    // Assert: nothing was left in flight, and the retry came after its backoff, not at the restart
    expect(code).toBe(0);
    // (Under SQS_CHAOS each queue's banner names its in-flight limit: not a message left in flight.)
    const said = restarted
      .output()
      .split('\n')
      .filter((line) => !line.includes('SQS chaos on the'));
    expect(said.join('\n')).not.toMatch(/in flight|requeued|did not stop cleanly/);
    expect(restarted.released).toBe(0);
    const [, second, third] = alarmAttempts(rcv.received, uuid);
    expect(third.at - second.at).toBeGreaterThanOrEqual(BACKOFF_SECONDS * 1000);
    expect(third.headers['webhook-id']).toBe(second.headers['webhook-id']);
  }, 120_000);
});
