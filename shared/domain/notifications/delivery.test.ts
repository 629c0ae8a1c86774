import { describe, expect, it } from 'vitest';
import type { NotificationJob } from '../../contracts/messages.ts';
import type { User } from '../directory/model.ts';
import type { Task } from '../tasks/model.ts';
import {
  deliverNotification,
  deliverNotificationBatch,
  type NotifyDeps,
  type Providers,
} from './delivery.ts';
import type { SendOutcome } from './providers/types.ts';
import type { AttemptRecord, JobRun, JobState } from './repository.ts';
import { logged } from '../../testing/logs.ts';

/** The consumer's decisions with in-memory adapters: what is final, what is retried, what is sent. */
const users: User[] = [
  { uid: 1, username: 'Ann', user: 'ann', email: 'ann@example.com', phone: '13800000000', wechatid: '' },
  { uid: 2, username: 'Bo', user: 'bo', email: '', phone: '', wechatid: 'bo' },
].map((u) => ({ ...u, pinyin: '', department: '', role: 0, created_at: 0, updated_at: 0 }));

interface World {
  deps: NotifyDeps;
  states: Map<string, JobState>;
  attempts: AttemptRecord[];
  /** Bookkeeping writes (one per run). */
  writes: number;
  sent: { channel: string; to: string }[];
  requeued: { body: NotificationJob; delaySeconds: number }[];
  dead: NotificationJob[];
  runs: JobRun[];
  /** Runs recorded in the notification log, each call's. */
  logged: JobRun[][];
  /** Users reads (calls). */
  userReads: number;
}

function world(opts: {
  providers?: Partial<Providers>;
  send?: (to: string) => SendOutcome;
  throttled?: boolean;
}): World {
  const w: World = {
    deps: undefined as unknown as NotifyDeps,
    states: new Map(),
    attempts: [],
    writes: 0,
    sent: [],
    requeued: [],
    dead: [],
    runs: [],
    logged: [],
    userReads: 0,
  };
  const send = opts.send ?? (() => ({ outcome: 'delivered', code: '0' }) as SendOutcome);
  const sender = (channel: string) => ({
    send: async (to: string) => {
      w.sent.push({ channel, to });
      return send(to);
    },
  });
  const providers: Providers = {
    robotBase: () => undefined,
    workNotice: () => undefined,
    mailer: () => sender('email'),
    sms: () => sender('sms'),
    voice: () => undefined,
    ...opts.providers,
  };
  w.deps = {
    cfg: {
      envName: 'test',
      timeZone: 'UTC',
      notifyBackoffSeconds: [5, 30],
      notify: { robots: {}, robotMaxPerMinute: 20, robotBlockSeconds: 60, httpTimeoutMs: 1000 },
    },
    getTask: async (id) => ({ id, name: 'n', template: {}, compress: { enable: false } }) as unknown as Task,
    getTemplate: async () => undefined,
    getUsers: async (uids) => {
      w.userReads++;
      return users.filter((u) => uids.includes(u.uid));
    },
    getJobState: async (jobId) => w.states.get(jobId),
    recordJobRun: async (run) => {
      w.runs.push(run);
      const s = w.states.get(run.job_id);
      w.states.set(run.job_id, {
        job_id: run.job_id,
        task_id: run.task_id,
        status: run.status,
        done: run.done,
        runs: (s?.runs ?? 0) + 1,
        last_attempt: run.attempt,
        ...(s?.dead_after !== undefined ? { dead_after: s.dead_after } : {}),
        updated_at: Math.floor(run.at_ms / 1000),
      });
      w.attempts.push(...run.attempts);
      w.writes++;
    },
    markDeadLettered: async (jobs) => {
      for (const j of jobs) {
        const s = w.states.get(j.job_id);
        if (s) w.states.set(j.job_id, { ...s, dead_after: j.attempts_before ?? 0 });
      }
    },
    logRuns: async (runs) => {
      w.logged.push(runs);
      w.attempts.push(...runs.flatMap((r) => r.attempts));
      w.writes++;
    },
    loggedRun: async (_taskId, jobId, sinceMs) => {
      const run = w.logged.flat().find((r) => r.job_id === jobId && r.at_ms >= sinceMs);
      return run && { ...run, attempts: run.attempts };
    },
    providers,
    throttle: { take: async () => !opts.throttled, backOff: async () => undefined },
    requeue: async (messages) => {
      w.requeued.push(...messages);
    },
    deadLetter: async (jobs) => {
      w.dead.push(...jobs);
    },
  };
  return w;
}

const job = (channel: NotificationJob['channel'], extra: Partial<NotificationJob> = {}): string =>
  JSON.stringify({
    kind: 'notify',
    job_id: `j:${channel}`,
    task_id: 1,
    scene: 'not_compress',
    channel,
    context: { task: { id: 1, name: 'n' }, history: { level: 1, ctn: { a: 1 } } },
    ...extra,
  });

describe('deliverNotification', () => {
  it('sends to every user with an address, skips the others, and is done', async () => {
    const w = world({});
    expect(await deliverNotification(job('email', { users: [1, 2, 9] }), 1, w.deps)).toBe('done');
    expect(w.sent).toEqual([{ channel: 'email', to: 'ann@example.com' }]);
    expect(w.attempts.map((a) => [a.target, a.outcome, a.code]).sort()).toEqual([
      ['uid 1 an***@example.com', 'delivered', '0'],
      ['uid 2', 'skipped', 'no_email'],
      ['uid 9', 'skipped', 'unknown_user'],
    ]);
    expect(w.states.get('j:email')?.status).toBe('delivered');
  });

  it('retries only the targets that failed', async () => {
    let fail = true;
    const w = world({
      send: () => (fail ? { outcome: 'failed', code: 'smtp_451' } : { outcome: 'delivered', code: '0' }),
    });
    const body = job('sms', { users: [1] });
    expect(await deliverNotification(body, 1, w.deps)).toBe('retry');
    expect(w.states.get('j:sms')).toMatchObject({ status: 'pending', done: [] });
    fail = false;
    expect(await deliverNotification(body, 2, w.deps)).toBe('done');
    expect(w.states.get('j:sms')).toMatchObject({ status: 'delivered', done: ['uid:1'] });
    // A third copy of the message sends nothing.
    expect(await deliverNotification(body, 3, w.deps)).toBe('done');
    expect(w.sent).toHaveLength(2);
  });

  it('a second copy of a retry whose attempt was made sends nothing (the queue delivered it twice)', async () => {
    // Arrange: attempt 2 failed; its retry message (attempt 3) arrives twice
    const w = world({ send: () => ({ outcome: 'failed', code: 'smtp_451' }) });
    const body = job('sms', { users: [1] });
    expect(await deliverNotification(body, 1, w.deps)).toBe('retry');
    expect(await deliverNotification(body, 2, w.deps)).toBe('retry');
    const retry = job('sms', { users: [1], attempts_before: 2 });
    // Act
    const [first, warnings] = await logged('warn', () => deliverNotification(retry, 1, w.deps));
    const copy = await deliverNotification(retry, 1, w.deps);
    // Assert: attempt 3 made once (the last of a backoff of two: an operator's business); the copy is
    // done without sending
    expect(warnings.map(([message]) => message)).toEqual(['notification not delivered']);
    expect([first, copy]).toEqual(['retry', 'done']);
    expect(w.sent).toHaveLength(3);
    expect(w.attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
  });

  it('records a schedule with nobody on call as skipped (nobody_on_call), and keeps the answer with the job', async () => {
    const w = world({});
    const oncall = [
      {
        schedule_id: 4,
        at: 100,
        uids: [],
        source: { kind: 'none' },
        shift: { start: 100, end: 100 },
        channels: ['email'],
      },
    ];
    const body = job('email', { job_id: 'j:email:s4', users: [], oncall } as Partial<NotificationJob>);
    expect(await deliverNotification(body, 1, w.deps)).toBe('done');
    expect(w.attempts).toMatchObject([
      { outcome: 'skipped', code: 'nobody_on_call', detail: 'nobody on call' },
    ]);
    expect(w.runs[0]).toMatchObject({ status: 'skipped', oncall });
    expect(w.sent).toEqual([]);
  });

  it('records a channel without provider as skipped: not configured, final', async () => {
    const w = world({});
    expect(await deliverNotification(job('phone', { users: [1] }), 1, w.deps)).toBe('done');
    expect(w.attempts).toMatchObject([{ outcome: 'skipped', code: 'not_configured', target: 'uids 1' }]);
    expect(w.states.get('j:phone')?.status).toBe('skipped');
  });

  it('a refused target is final (rejected), not retried', async () => {
    const w = world({ send: () => ({ outcome: 'rejected', code: 'InvalidParameterException' }) });
    const [out, warnings] = await logged('warn', () =>
      deliverNotification(job('sms', { users: [1] }), 1, w.deps),
    );
    expect(out).toBe('done');
    expect(w.states.get('j:sms')?.status).toBe('rejected');
    // A refusal is an operator's business: codes and masked targets only
    expect(warnings).toEqual([
      [
        'notification not delivered',
        {
          job_id: 'j:sms',
          channel: 'sms',
          status: 'rejected',
          attempt: 1,
          outcomes: ['rejected:InvalidParameterException'],
        },
      ],
    ]);
  });

  it('leaves a throttled robot job pending without calling the provider', async () => {
    const w = world({ throttled: true, providers: { robotBase: () => 'http://127.0.0.1:9/robot/send' } });
    const body = job('dinggroup', {
      robots: [{ webhook: 'tok-aaaaaaaaaaaa' }, { webhook: 'tok-bbbbbbbbbbbb' }],
    });
    expect(await deliverNotification(body, 1, w.deps)).toBe('retry');
    expect(w.attempts.map((a) => a.outcome)).toEqual(['throttled', 'throttled']);
    expect(w.states.get('j:dinggroup')?.status).toBe('pending');
  });

  it('records a run in one write, reading nothing before a first delivery', async () => {
    const w = world({});
    let reads = 0;
    const read = w.deps.getJobState;
    w.deps.getJobState = async (id) => {
      reads++;
      return read(id);
    };
    expect(await deliverNotification(job('email', { users: [1, 2] }), 1, w.deps)).toBe('done');
    expect(w.writes).toBe(1);
    expect(reads).toBe(0);
  });

  it('a replayed job that finished before is not sent again; one never run is looked at again later', async () => {
    const w = world({});
    await deliverNotification(job('email', { users: [1] }), 1, w.deps);
    const replay = (channel: NotificationJob['channel']) => job(channel, { users: [1], replay: true });
    expect(await deliverNotification(replay('email'), 1, w.deps)).toBe('done');
    expect(await deliverNotification(replay('sms'), 1, w.deps)).toBe('retry');
    expect(await deliverNotification(replay('sms'), 2, w.deps)).toBe('done');
    expect(w.sent.map((x) => x.channel)).toEqual(['email', 'sms']);
  });
});

describe('deliverNotificationBatch', () => {
  it('queues each job to retry again, delayed by its backoff, the last one in the dead-letter queue; reports only the malformed', async () => {
    const w = world({ send: () => ({ outcome: 'failed', code: 'timeout' }) });
    const [[res, warnings], errors] = await logged('error', () =>
      logged('warn', () =>
        deliverNotificationBatch(
          [
            { messageId: 'm1', receiptHandle: 'h1', body: job('sms', { users: [1] }), receiveCount: 1 },
            { messageId: 'm2', receiptHandle: 'h2', body: job('phone', { users: [1] }), receiveCount: 1 },
            {
              messageId: 'm3',
              receiptHandle: 'h3',
              body: job('email', { users: [1], attempts_before: 2 }),
              receiveCount: 1,
            },
            { messageId: 'm4', receiptHandle: 'h4', body: 'garbage', receiveCount: 1 },
          ],
          w.deps,
        ),
      ),
    );
    expect(errors).toEqual([['malformed notification job; left for the dead-letter queue', { length: 7 }]]);
    // The last attempt of a job still not delivered is an operator's business
    expect(warnings.map(([m, a]) => [m, a.job_id, a.attempt])).toEqual([
      ['notification not delivered', 'j:email', 3],
    ]);
    expect(res.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m4']);
    expect(w.requeued.map((r) => [r.body.job_id, r.body.attempts_before, r.delaySeconds])).toEqual([
      ['j:sms', 1, 5],
    ]);
    expect(w.dead.map((j) => [j.job_id, j.attempts_before])).toEqual([['j:email', 3]]);
  });

  it('gives a job redriven from the dead-letter queue its retries again, numbered on', async () => {
    // Arrange: 3 attempts made (the budget with backoffs [5, 30]), then redriven
    const w = world({ send: () => ({ outcome: 'failed', code: 'timeout' }) });
    const redriven = (before: number) =>
      job('email', { users: [1], attempts_before: before, redriven_after: 3 });
    // Act: its first attempt after the redrive, then its last
    await deliverNotificationBatch(
      [{ messageId: 'm1', receiptHandle: 'h1', body: redriven(3), receiveCount: 1 }],
      w.deps,
    );
    const [, warnings] = await logged('warn', () =>
      deliverNotificationBatch(
        [{ messageId: 'm2', receiptHandle: 'h2', body: redriven(5), receiveCount: 1 }],
        w.deps,
      ),
    );
    // Assert: attempt 4 retried after the first backoff; attempt 6 (its third) the last
    expect(w.requeued.map((r) => [r.body.attempts_before, r.delaySeconds])).toEqual([[4, 5]]);
    expect(w.dead.map((j) => [j.attempts_before, j.redriven_after])).toEqual([[6, 3]]);
    expect(warnings.map(([m, a]) => [m, a.attempt])).toEqual([['notification not delivered', 6]]);
  });

  it('puts a job in the dead-letter queue once when the message that put it there comes back', async () => {
    // Arrange: the last attempt (3 with backoffs [5, 30]) failed and went to the dead-letter queue
    const w = world({ send: () => ({ outcome: 'failed', code: 'timeout' }) });
    const last = job('email', { users: [1], attempts_before: 2 });
    await logged('warn', () =>
      deliverNotificationBatch(
        [{ messageId: 'm1', receiptHandle: 'h1', body: last, receiveCount: 1 }],
        w.deps,
      ),
    );
    // Act: SQS lost the delete: the same message again, twice
    const res = await deliverNotificationBatch(
      [{ messageId: 'm1', receiptHandle: 'h1', body: last, receiveCount: 2 }],
      w.deps,
    );
    const third = await deliverNotificationBatch(
      [{ messageId: 'm1', receiptHandle: 'h1', body: last, receiveCount: 3 }],
      w.deps,
    );
    // Assert: acknowledged, not sent again, not moved again
    expect([res.batchItemFailures, third.batchItemFailures]).toEqual([[], []]);
    expect(w.sent).toHaveLength(1);
    expect(w.dead.map((j) => [j.job_id, j.attempts_before])).toEqual([['j:email', 3]]);
  });

  it('puts a job whose retries were used up before a receive tried it in the dead-letter queue, untried', async () => {
    // Arrange: the last attempt's message, its earlier receive gone before it was recorded
    const w = world({});
    w.states.set('j:email', {
      job_id: 'j:email',
      task_id: 7,
      status: 'pending',
      done: [],
      runs: 2,
      last_attempt: 2,
      updated_at: 0,
    });
    // Act
    const res = await deliverNotificationBatch(
      [
        {
          messageId: 'm1',
          receiptHandle: 'h1',
          body: job('email', { users: [1], attempts_before: 2 }),
          receiveCount: 2,
        },
      ],
      w.deps,
    );
    // Assert: to the dead-letter queue with the attempts made before this receive, and marked so
    expect(res.batchItemFailures).toEqual([]);
    expect(w.sent).toEqual([]);
    expect(w.dead.map((j) => [j.job_id, j.attempts_before])).toEqual([['j:email', 3]]);
    expect(w.states.get('j:email')?.dead_after).toBe(3);
  });

  it('chains a backoff past SQS 15-minute delay and sends a retry received early back untried', async () => {
    // Arrange: a backoff of an hour after the first attempt
    const w = world({ send: () => ({ outcome: 'failed', code: 'timeout' }) });
    w.deps.cfg = { ...w.deps.cfg, notifyBackoffSeconds: [3600, 3600] };
    // Act
    await logged('warn', () =>
      deliverNotificationBatch(
        [{ messageId: 'm1', receiptHandle: 'h1', body: job('sms', { users: [1] }), receiveCount: 1 }],
        w.deps,
      ),
    );
    const [first] = w.requeued;
    await deliverNotificationBatch(
      [{ messageId: 'm2', receiptHandle: 'h2', body: JSON.stringify(first.body), receiveCount: 1 }],
      w.deps,
    );
    // Assert: queued for 900 s, due in an hour; received early, back again with the rest, not sent
    expect(first.delaySeconds).toBe(900);
    expect(first.body.retry_at_ms).toBeGreaterThan(Date.now() + 3_000_000);
    expect(w.requeued[1]).toEqual({ body: first.body, delaySeconds: 900 });
    expect(w.sent).toHaveLength(1);
  });

  it('records the first runs that settled their jobs in one log write; a run left pending in its job item', async () => {
    // Arrange: e-mail delivered, phone skipped (no provider), SMS failing
    const w = world({
      send: (to) =>
        to.includes('@') ? { outcome: 'delivered', code: '250' } : { outcome: 'failed', code: 'timeout' },
    });
    // Act
    await deliverNotificationBatch(
      [
        { messageId: 'm1', receiptHandle: 'h1', body: job('email', { users: [1] }), receiveCount: 1 },
        { messageId: 'm2', receiptHandle: 'h2', body: job('phone', { users: [1] }), receiveCount: 1 },
        { messageId: 'm3', receiptHandle: 'h3', body: job('sms', { users: [1, 2] }), receiveCount: 1 },
      ],
      w.deps,
    );
    // Assert: one log write for the two settled jobs, one job item for the pending one; users read once
    expect(w.logged.map((runs) => runs.map((r) => [r.job_id, r.status]).sort())).toEqual([
      [
        ['j:email', 'delivered'],
        ['j:phone', 'skipped'],
      ],
    ]);
    expect(w.runs.map((r) => [r.job_id, r.status])).toEqual([['j:sms', 'pending']]);
    expect(w.writes).toBe(2);
    expect(w.userReads).toBe(1);
  });

  it('a message received again, or a replay, whose first run is in the log is done without sending', async () => {
    // Arrange: a batch that sent and logged the e-mail job
    const w = world({});
    const first = {
      messageId: 'm1',
      receiptHandle: 'h1',
      body: job('email', { users: [1] }),
      receiveCount: 1,
    };
    await deliverNotificationBatch([first], w.deps);
    // Act: the same message received again (its delete was lost), and a producer's replay of it
    const again = await deliverNotificationBatch([{ ...first, receiveCount: 2, firstReceivedMs: 0 }], w.deps);
    const replay = await deliverNotification(
      job('email', { users: [1], replay: true, replay_since_ms: 0 }),
      1,
      w.deps,
    );
    // Assert
    expect(again.batchItemFailures).toEqual([]);
    expect(replay).toBe('done');
    expect(w.sent).toHaveLength(1);
    expect(w.runs).toEqual([]);
  });
});

describe('the job record', () => {
  it('keeps the message as the channel sends it (an SMS cut to 300 characters)', async () => {
    // Arrange
    const w = world({});
    const long = 'x'.repeat(500);
    // Act
    await deliverNotification(
      job('sms', { users: [1], context: { task: { id: 1, name: 'n' }, history: { level: 1, ctn: long } } }),
      1,
      w.deps,
    );
    // Assert
    const message = w.runs[0].message;
    expect(message?.title).toBeUndefined();
    expect([...(message?.text ?? '')]).toHaveLength(300);
    expect(message?.text.endsWith('…')).toBe(true);
  });

  it('a job redriven after 7 runs reads its state first, sends only what is left and numbers on', async () => {
    // Arrange: user 1 was served before the job went to the dead-letter queue
    const w = world({});
    w.states.set('j:email', {
      job_id: 'j:email',
      task_id: 1,
      status: 'pending',
      done: ['uid:1'],
      runs: 7,
      updated_at: 0,
    });
    // Act
    const [out, warnings] = await logged('warn', () =>
      deliverNotification(job('email', { users: [1, 4], attempts_before: 7 }), 1, w.deps),
    );
    // Assert: attempt 8 is past the backoff's last: not delivered is said
    expect(warnings.map(([message, a]) => [message, a.attempt])).toEqual([['notification not delivered', 8]]);
    expect(out).toBe('done');
    expect(w.sent).toEqual([]);
    expect(w.attempts).toMatchObject([{ target: 'uid 4', attempt: 8, code: 'unknown_user' }]);
  });

  it('refuses a job whose attempts_before is not a count (malformed)', async () => {
    const w = world({});
    const body = job('email', { users: [1], attempts_before: -1 });
    const [out, errors] = await logged('error', () => deliverNotification(body, 1, w.deps));
    expect(out).toBe('malformed');
    expect(errors).toEqual([
      ['malformed notification job; left for the dead-letter queue', { length: body.length }],
    ]);
  });
});
