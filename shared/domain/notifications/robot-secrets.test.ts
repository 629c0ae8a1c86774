import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/**
 * Group robots through the notification consumer with every log line written (DEBUG): robots come
 * sealed in their jobs (or in plain, from jobs queued before robots were sealed), are opened only
 * to be called, reach the robot API with the right token and signature, and neither their tokens
 * nor their secrets appear in a log line or a delivery record, whatever happens to the call.
 */

process.env.LOG_LEVEL = 'DEBUG';
process.env.TABLE_NAME = 'unit';
process.env.SEAL_KEY = randomBytes(32).toString('base64');
const { resetConfig } = await import('../../config/env.ts');
resetConfig();
const { isSealed } = await import('../auth/seal.ts');
const { sealRobot } = await import('../channels/robots.ts');
const { deliverNotificationBatch } = await import('./delivery.ts');
type NotifyDeps = import('./delivery.ts').NotifyDeps;
type AttemptRecord = import('./repository.ts').AttemptRecord;

/** Every line written to stdout and stderr while `run` runs (the logger writes errors to stderr). */
async function output(run: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const keep = (chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  const spies = [vi.spyOn(process.stdout, 'write'), vi.spyOn(process.stderr, 'write')];
  for (const spy of spies) spy.mockImplementation(keep);
  try {
    await run();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return lines;
}

const token = (name: string) => `${name}${randomBytes(16).toString('hex')}`;
/** What the robot API answers per access token (DingTalk's replies), and what it was sent. */
const replies = new Map<string, { status: number; body: unknown }>();
const calls: { token: string; signed: boolean }[] = [];
/** Jobs queued again for a retry. */
const requeued: string[] = [];
const secrets = new Map<string, string>();
let server: Server;
let base = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const t = url.searchParams.get('access_token') ?? '';
    const secret = secrets.get(t);
    const ts = url.searchParams.get('timestamp') ?? '';
    const signed =
      !!secret &&
      url.searchParams.get('sign') ===
        createHmac('sha256', secret).update(`${ts}\n${secret}`).digest('base64');
    calls.push({ token: t, signed });
    const reply = replies.get(t) ?? { status: 200, body: { errcode: 0, errmsg: 'ok' } };
    req.resume();
    req.on('end', () => {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}/robot/send`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function deps(attempts: AttemptRecord[]): NotifyDeps {
  return {
    cfg: {
      envName: 'test',
      timeZone: 'UTC',
      notifyBackoffSeconds: [5, 30],
      notify: { robots: {}, robotMaxPerMinute: 20, robotBlockSeconds: 60, httpTimeoutMs: 2000 },
    },
    getTask: async (id) => ({ id, name: 'n', template: {}, compress: { enable: false } }) as never,
    getTemplate: async () => undefined,
    getUsers: async () => [],
    getJobState: async () => undefined,
    recordJobRun: async (run) => {
      attempts.push(...run.attempts);
    },
    logRuns: async (runs) => {
      attempts.push(...runs.flatMap((r) => r.attempts));
    },
    loggedRun: async () => undefined,
    providers: {
      robotBase: () => base,
      workNotice: () => undefined,
      mailer: () => undefined,
      sms: () => undefined,
      voice: () => undefined,
    },
    throttle: { take: async () => true, backOff: async () => undefined },
    requeue: async (messages) => {
      requeued.push(...messages.map((m) => m.body.job_id));
    },
    deadLetter: async () => undefined,
  };
}

const job = (id: string, robots: { webhook: string; secret?: string }[]) => ({
  messageId: id,
  receiptHandle: id,
  receiveCount: 1,
  body: JSON.stringify({
    kind: 'notify',
    job_id: id,
    task_id: 1,
    scene: 'not_compress',
    channel: 'dinggroup',
    robots,
    context: { task: { id: 1, name: 'n' }, history: { level: 1, ctn: { a: 1 } } },
  }),
});

describe('robot credentials in the notification consumer', () => {
  it('opens sealed robots to call them, and writes their tokens and secrets nowhere', async () => {
    // Arrange: a robot that fails (500), one that refuses (310000 bad signature), one that takes it;
    // a job of sealed robots, one written in plain before sealing, and one whose seal is damaged.
    const [failing, refusing, taking, legacy, damaged] = ['f', 'r', 't', 'l', 'd'].map(token);
    for (const t of [failing, refusing, taking, legacy, damaged]) secrets.set(t, `SEC${t}`);
    replies.set(failing, { status: 500, body: { errcode: -1, errmsg: `busy ${failing}` } });
    replies.set(refusing, { status: 200, body: { errcode: 310000, errmsg: 'sign not match' } });
    const sealed = [failing, refusing, taking].map((t) => sealRobot({ webhook: t, secret: `SEC${t}` }));
    expect(sealed.every((r) => isSealed(r.webhook) && isSealed(r.secret ?? ''))).toBe(true);
    const broken = sealRobot({ webhook: damaged, secret: `SEC${damaged}` });
    broken.webhook = `${broken.webhook.slice(0, -6)}AAAA==`;
    const attempts: AttemptRecord[] = [];
    // Act
    let result: unknown;
    const lines = await output(async () => {
      result = await deliverNotificationBatch(
        [
          job('j:sealed', sealed),
          job('j:legacy', [{ webhook: legacy, secret: `SEC${legacy}` }]),
          job('j:damaged', [broken]),
        ],
        deps(attempts),
      );
    });
    // Assert: each robot was called with its own token and a good signature, in failover order.
    const sealedJob = [failing, refusing, taking];
    expect(calls.filter((c) => sealedJob.includes(c.token))).toEqual(
      sealedJob.map((t) => ({ token: t, signed: true })),
    );
    expect(calls.filter((c) => c.token === legacy)).toEqual([{ token: legacy, signed: true }]);
    expect(calls.some((c) => c.token === damaged)).toBe(false);
    // ... the damaged job is left for a retry (and, in the end, the dead-letter queue).
    expect(result).toEqual({ batchItemFailures: [] });
    expect(requeued).toEqual(['j:damaged']);
    // ... the records name each robot masked.
    const outcomes = (jobId: string) => attempts.filter((a) => a.job_id === jobId).map((a) => a.outcome);
    expect(outcomes('j:sealed')).toEqual(['failed', 'rejected', 'delivered']);
    expect(outcomes('j:legacy')).toEqual(['delivered']);
    expect(attempts.every((a) => /\*/.test(a.target))).toBe(true);
    // ... and no token, secret or sealed value is in a record or a log line.
    expect(lines.length).toBeGreaterThan(0);
    const written = JSON.stringify([attempts, lines]);
    for (const t of [failing, refusing, taking, legacy, damaged]) {
      expect(written).not.toContain(t);
      expect(written).not.toContain(`SEC${t}`);
    }
    for (const r of [...sealed, broken]) expect(written).not.toContain(r.webhook);
  });
});
