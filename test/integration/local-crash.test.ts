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
  loadGenerator,
  startChildStack,
  waitGone,
} from './local-child-stack.ts';

/**
 * The local stack loses no accepted alarm when it dies (kill -9) or is stopped (SIGTERM) under load:
 * a real stack in a child process with a data directory of its own, alarms reported concurrently over
 * HTTP, a real webhook receiver on 127.0.0.1, and a restart on the same data directory. Every alarm
 * answered with code 0 must reach the webhook as an ALARM event (at least once).
 */
const CONCURRENCY = 16;
/** Alarms accepted before the stack is killed or stopped. */
const ACCEPTED_BEFORE_STOP = 150;
/**
 * Webhook retries every 4 s: a webhook event the dead process had claimed stays leased for about 15 s,
 * and the six retries must outlast that lease (with 1 s backoffs the event would reach its dead-letter
 * queue first).
 */
const STACK_ENV = { ALARM_RATE_LIMIT: '1000000', WEBHOOK_BACKOFF_SECONDS: '4,4,4,4,4,4' };

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

async function start(dir: string, env: Record<string, string> = {}): Promise<ChildStack> {
  const s = await startChildStack({
    dataDir: join(dir, 'data'),
    stateFile: join(dir, 'state.json'),
    env: { ...STACK_ENV, ...env },
  });
  started.push(s);
  return s;
}

/** A fresh stack with the test directory, an app and a task whose webhook is `receiver`. */
async function arrange(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'tocsin-crash-'));
  dirs.push(dir);
  receiver = await new TestReceiver().start();
  const stack = await start(dir, env);
  const imported = await admin(join(dir, 'state.json'), 'import', 'test/fixtures/directory.json');
  if (imported.code !== 0) throw new Error(`import failed: ${imported.stderr}`);
  const app = await createApp(join(dir, 'state.json'));
  const task = await createWebhookTask(stack.url, app, `${receiver.url}/hook`);
  await receiver.waitFor((all) => all.some((r) => r.json?.event === 'PING'));
  return { dir, stack, task, receiver };
}

const alarmUuid = (r: Received): string | undefined =>
  r.json?.event === 'ALARM' ? (r.json.data?.history?.uuid ?? r.json.data?.msg?.uuid) : undefined;

/** Waits (bounded) until every accepted uuid arrived at the receiver; returns the figures either way. */
async function deliveries(rcv: TestReceiver, accepted: string[], timeoutMs: number) {
  const wanted = new Set(accepted);
  const deadline = Date.now() + timeoutMs;
  const seen = () => new Set(rcv.received.map(alarmUuid).filter((u): u is string => !!u && wanted.has(u)));
  while (seen().size < wanted.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const events = rcv.received.map(alarmUuid).filter((u): u is string => !!u && wanted.has(u));
  const delivered = new Set(events);
  return {
    delivered: delivered.size,
    duplicates: events.length - delivered.size,
    lost: accepted.filter((u) => !delivered.has(u)),
  };
}

describe('local stack durability', () => {
  it('delivers every alarm answered with code 0 after kill -9 of the stack and its JVM mid-load', async () => {
    // Arrange
    const { dir, stack, task, receiver: rcv } = await arrange();
    let url = stack.url;
    const load = loadGenerator(() => url, task, CONCURRENCY);

    // Act: kill -9 both processes while reports flow, then restart on the same data directory
    while (load.accepted().length < ACCEPTED_BEFORE_STOP) await new Promise((r) => setTimeout(r, 10));
    process.kill(stack.pid, 'SIGKILL');
    process.kill(stack.javaPid, 'SIGKILL');
    await stack.exited;
    await load.stop();
    const accepted = load.accepted();
    const restarted = await start(dir);
    url = restarted.url;
    const figures = await deliveries(rcv, accepted, 40_000);
    console.log(
      `kill -9: accepted ${accepted.length}, delivered ${figures.delivered}, duplicates ${figures.duplicates}, ` +
        `lost ${figures.lost.length}, unanswered ${load.results.filter((r) => r.code === undefined).length}, ` +
        `requeued at restart ${restarted.released}`,
    );

    // Assert
    expect(stack.child.signalCode).toBe('SIGKILL');
    expect(accepted.length).toBeGreaterThanOrEqual(ACCEPTED_BEFORE_STOP);
    expect(figures.lost).toEqual([]);
  });

  it('loses nothing on SIGTERM under load and answers nothing with code 0 once it stopped accepting', async () => {
    // Arrange
    const { dir, stack, task, receiver: rcv } = await arrange();
    let url = stack.url;
    const load = loadGenerator(() => url, task, CONCURRENCY);

    // Act: SIGTERM while reports flow (they keep coming until the stack is gone), then restart
    while (load.accepted().length < ACCEPTED_BEFORE_STOP) await new Promise((r) => setTimeout(r, 10));
    stack.child.kill('SIGTERM');
    const code = await stack.exited;
    await load.stop();
    const stoppedAt = Number(/stopped accepting at (\d+)/.exec(stack.output())?.[1]);
    const stages = [...stack.output().matchAll(/^ {2}(\w+): stopped/gm)].map((m) => m[1]);
    const javaGone = await waitGone(stack.javaPid, 5_000);
    const accepted = load.accepted();
    const okAfterStop = load.results.filter((r) => r.code === 0 && r.sentAt > stoppedAt);
    const refused = load.results.filter((r) => r.sentAt > stoppedAt && r.code !== 0).length;
    const restarted = await start(dir);
    url = restarted.url;
    const figures = await deliveries(rcv, accepted, 40_000);
    console.log(
      `SIGTERM: accepted ${accepted.length}, delivered ${figures.delivered}, duplicates ${figures.duplicates}, ` +
        `lost ${figures.lost.length}, refused or unanswered after the stop ${refused}, ` +
        `code 0 after the stop ${okAfterStop.length}, requeued at restart ${restarted.released}`,
    );

    // Assert
    expect(code).toBe(0);
    expect(stages).toEqual(['http', 'pollers', 'schedule', 'sqs', 'dynamodb']);
    expect(javaGone).toBe(true);
    expect(stoppedAt).toBeGreaterThan(0);
    expect(okAfterStop).toEqual([]);
    expect(accepted.length).toBeGreaterThanOrEqual(ACCEPTED_BEFORE_STOP);
    expect(figures.lost).toEqual([]);
  });
});
