import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import type { WebhookBundle, WebhookMessage } from '../../messaging/messages.ts';
import type { Task } from '../tasks/model.ts';
import {
  type DeliveryDeps,
  type DeliveryRecord,
  deliverNow,
  deliverWebhooks,
  postJson,
  retryDelaySeconds,
  sendEventNow,
} from './delivery.ts';
import type { WebhookAttempt } from './repository.ts';
import { verifyWebhookSignature } from './signature.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  process.env.WEBHOOK_BACKOFF_SECONDS = '5,30,120,600,1800,3600';
  process.env.SERVICE_VERSION = '9.8.7';
  process.env.BLOCK_PRIVATE_WEBHOOKS = '1';
  resetConfig();
});

const SECRET = 'f'.repeat(40);
const task = (webhook?: string) =>
  ({
    id: 12,
    name: 'n',
    secret: SECRET,
    token: 't',
    receiver: { channels: webhook ? { webhook } : {} },
  }) as Task;

function message(n: number, taskId = 12, event: WebhookMessage['body']['event'] = 'ALARM'): WebhookMessage {
  return {
    kind: 'webhook',
    event_id: `evt-${taskId}-${n}`,
    task_id: taskId,
    created_at: 1700000000,
    body: { event, type: 'compress_disable', data: { n }, extra: {} },
  };
}

function bundle(ns: number[], taskId = 12, extra: Partial<WebhookMessage> = {}): WebhookBundle {
  return {
    kind: 'webhooks',
    task_id: taskId,
    created_at: 1700000000,
    events: ns.map((n) => {
      const { kind: _k, task_id: _t, created_at: _c, ...e } = { ...message(n, taskId), ...extra };
      return e;
    }),
  };
}

function rec(m: WebhookMessage | WebhookBundle | string, receiveCount = 1, id?: string): DeliveryRecord {
  const body = typeof m === 'string' ? m : JSON.stringify(m);
  return {
    messageId: id ?? (typeof m === 'string' ? 'bad' : m.kind === 'webhook' ? m.event_id : 'bundle'),
    receiptHandle: `rh-${id}`,
    body,
    receiveCount,
  };
}

/** A recorded attempt of task 12's event that the receiver answered with a 500. */
const failedAttempt = (eventId: string, attempt: number, atMs: number): WebhookAttempt => ({
  event_id: eventId,
  task_id: 12,
  attempt,
  event: 'ALARM',
  type: 'compress_disable',
  outcome: 'failed',
  status: 500,
  error: 'HTTP 500',
  duration_ms: 2,
  at_ms: atMs,
  at: Math.floor(atMs / 1000),
});

interface Posted {
  url: string;
  headers: Record<string, string>;
  body: string;
}

function fakes(
  opts: { task?: Task; status?: number | ((n: number) => number); refuse?: boolean; postMs?: number } = {},
) {
  const posted: Posted[] = [];
  const own: WebhookAttempt[] = [];
  const logs: WebhookAttempt[][] = [];
  const delays: [string, number][] = [];
  const requeued: { body: WebhookMessage; delaySeconds: number }[] = [];
  const bundled: WebhookBundle[] = [];
  const searches: [string, boolean][] = [];
  let requeueFails = 0;
  const taskReads: [number, number | undefined][] = [];
  const inFlight = { now: 0, max: 0 };
  const deps: DeliveryDeps = {
    getTask: async (id, notOlderThan) => {
      taskReads.push([id, notOlderThan]);
      return 'task' in opts ? opts.task : task('https://hooks.example.com/in?token=abc');
    },
    checkUrl: async (url) =>
      opts.refuse ? { ok: false, reason: 'not public' } : { ok: true, url: new URL(url) },
    post: async (url, headers, body) => {
      posted.push({ url: url.href, headers, body });
      inFlight.now++;
      inFlight.max = Math.max(inFlight.max, inFlight.now);
      if (opts.postMs) await new Promise((r) => setTimeout(r, opts.postMs));
      inFlight.now--;
      const status = typeof opts.status === 'function' ? opts.status(posted.length) : (opts.status ?? 200);
      return { status };
    },
    recordAttempts: async (a) => {
      own.push(...a);
    },
    logDeliveries: async (a) => {
      logs.push(a);
    },
    requeue: async (messages) => {
      if (requeueFails > 0) {
        requeueFails--;
        throw new Error('queue down');
      }
      requeued.push(...messages);
    },
    queueBundles: async (bundles) => {
      if (requeueFails > 0) {
        requeueFails--;
        throw new Error('queue down');
      }
      bundled.push(...bundles);
    },
    pastAttempts: async (eventId, _taskId, sinceMs, searchLog) => {
      searches.push([eventId, searchLog]);
      const past = [...own, ...(searchLog ? logs.flat() : [])].filter(
        (a) => a.event_id === eventId && a.at_ms >= sinceMs,
      );
      return {
        delivered: past.some((a) => a.outcome === 'delivered'),
        last: Math.max(0, ...past.map((a) => a.attempt)),
      };
    },
    delayRetry: async (handle, seconds) => {
      delays.push([handle, seconds]);
    },
  };
  const failRequeue = (n: number) => {
    requeueFails = n;
  };
  return { deps, posted, own, logs, delays, requeued, bundled, searches, failRequeue, taskReads, inFlight };
}

describe('deliverWebhooks', () => {
  it('POSTs the stored body with the contract headers and a verifiable signature, logged in one write', async () => {
    // Arrange
    const f = fakes();
    const m = message(1);
    // Act
    const res = await deliverWebhooks([rec(m), rec(message(2))], f.deps);
    // Assert
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(2);
    const { headers, body, url } = f.posted.find((p) => p.headers['webhook-id'] === 'evt-12-1') as Posted;
    expect(url).toBe('https://hooks.example.com/in?token=abc');
    expect(body).toBe(JSON.stringify(m.body));
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'svc/9.8.7',
      'webhook-id': 'evt-12-1',
    });
    expect(headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(
      verifyWebhookSignature(
        SECRET,
        'evt-12-1',
        headers['webhook-timestamp'],
        body,
        headers['webhook-signature'],
      ),
    ).toBe(true);
    expect(f.own).toEqual([]);
    expect(f.logs).toHaveLength(1);
    expect(f.logs[0].map((a) => a.event_id).sort()).toEqual(['evt-12-1', 'evt-12-2']);
    expect(f.logs[0][0]).toMatchObject({
      task_id: 12,
      attempt: 1,
      outcome: 'delivered',
      status: 200,
      target: 'https://hooks.example.com',
      event: 'ALARM',
      type: 'compress_disable',
    });
    expect(JSON.stringify(f.logs)).not.toContain('token=abc');
  });

  it.each([
    [1, 5],
    [2, 30],
    [6, 3600],
    [7, 0],
  ])(
    'on failure of attempt %i reports the record, sets visibility %i s, records the attempt on its own',
    async (attempt, seconds) => {
      const f = fakes({ status: 500 });
      const res = await deliverWebhooks([rec(message(1), attempt, 'm1')], f.deps);
      expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
      expect(f.delays).toEqual([['rh-m1', seconds]]);
      expect(f.own[0]).toMatchObject({ outcome: 'failed', status: 500, error: 'HTTP 500', attempt });
      expect(f.logs).toEqual([]);
    },
  );

  it('treats any status other than 200 as a failure', async () => {
    for (const status of [201, 204, 302, 404]) {
      const f = fakes({ status });
      const res = await deliverWebhooks([rec(message(1))], f.deps);
      expect(res.batchItemFailures).toHaveLength(1);
    }
  });

  it('records a retried message that succeeds as an attempt of its own (the event reads as one list)', async () => {
    const f = fakes();
    const res = await deliverWebhooks([rec(message(1), 3, 'm1')], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.own).toEqual([
      expect.objectContaining({ event_id: 'evt-12-1', attempt: 3, outcome: 'delivered' }),
    ]);
    expect(f.logs).toEqual([]);
  });

  it('sends copies of one event in one batch once; both share its fate', async () => {
    // Arrange: two copies of one event (a producer that ran twice), and a failing receiver
    const f = fakes({ status: 500 });
    // Act
    const res = await deliverWebhooks([rec(message(1), 1, 'a'), rec(message(1), 1, 'b')], f.deps);
    // Assert
    expect(f.posted).toHaveLength(1);
    expect(res.batchItemFailures.map((x) => x.itemIdentifier).sort()).toEqual(['a', 'b']);
  });

  it('sends events with the same order key in queue order, the others in parallel', async () => {
    // Arrange: three events of one workflow among seven unordered ones, each send taking 20 ms
    const f = fakes({ postMs: 20 });
    const ordered = [1, 2, 3].map((n) => ({ ...message(n), order_key: 'wf:9' }));
    const loose = [4, 5, 6, 7, 8, 9, 10].map((n) => message(n));
    // Act
    await deliverWebhooks(
      [ordered[0], loose[0], ordered[1], ...loose.slice(1), ordered[2]].map((m) => rec(m)),
      f.deps,
    );
    // Assert
    const ids = f.posted.map((p) => p.headers['webhook-id']);
    expect(ids.filter((id) => ['evt-12-1', 'evt-12-2', 'evt-12-3'].includes(id))).toEqual([
      'evt-12-1',
      'evt-12-2',
      'evt-12-3',
    ]);
    expect(f.inFlight.max).toBeGreaterThanOrEqual(8);
  });

  it.each([
    ['a deleted task', { task: undefined }, 'skipped', 'task not found'],
    ['a task without a webhook', { task: task() }, 'skipped', 'task has no webhook'],
    ['a refused URL', { refuse: true }, 'refused', 'not public'],
  ])('acknowledges without sending for %s, logged', async (_name, opts, outcome, error) => {
    const f = fakes(opts);
    const res = await deliverWebhooks([rec(message(1))], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(0);
    expect(f.logs).toEqual([[expect.objectContaining({ outcome, error })]]);
  });

  it('does not send again a replayed event that was delivered; one that was not goes after a look later', async () => {
    // Arrange: event 1 was delivered; the producer then ran again for events 1 and 2
    const f = fakes();
    await deliverWebhooks([rec(message(1))], f.deps);
    const replay = (n: number) => ({ ...message(n), replay_since_ms: 0 });
    // Act
    const first = await deliverWebhooks([rec(replay(1), 1, 'r1'), rec(replay(2), 1, 'r2')], f.deps);
    const again = await deliverWebhooks([rec(replay(2), 2, 'r2')], f.deps);
    // Assert: event 1 acknowledged at once; event 2 deferred by the first backoff, then sent
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: 'r2' }]);
    expect(f.delays).toEqual([['rh-r2', 5]]);
    expect(again.batchItemFailures).toEqual([]);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-12-1', 'evt-12-2']);
  });

  it('does not send again a message received a third time whose second receive delivered it', async () => {
    const f = fakes();
    await deliverWebhooks([rec(message(1), 2, 'm1')], f.deps);
    const res = await deliverWebhooks([rec(message(1), 3, 'm1')], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(1);
  });

  it('leaves a malformed message to the dead-letter queue', async () => {
    const f = fakes();
    const res = await deliverWebhooks([rec('{nope', 1, 'junk')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'junk' }]);
    expect(f.posted).toHaveLength(0);
  });

  it('reads a PING task fresh, others from the cache', async () => {
    const f = fakes();
    await deliverWebhooks([rec(message(1)), rec(message(3, 12, 'PING'))], f.deps);
    expect(f.taskReads.filter(([, n]) => n !== undefined)).toEqual([[12, 1700000000]]);
  });

  it('retries (with backoff) when the task cannot be read', async () => {
    const f = fakes();
    f.deps.getTask = async () => {
      throw new Error('throttled');
    };
    const res = await deliverWebhooks([rec(message(1), 3, 'y')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'y' }]);
    expect(f.delays).toEqual([['rh-y', 120]]);
    expect(f.posted).toHaveLength(0);
    expect(f.own).toEqual([expect.objectContaining({ outcome: 'failed', error: 'internal error' })]);
  });

  it('still acknowledges delivered events when their record cannot be written', async () => {
    const f = fakes();
    f.deps.logDeliveries = async () => {
      throw new Error('table unavailable');
    };
    const res = await deliverWebhooks([rec(message(1), 1, 'm1')], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(1);
  });
});

describe('deliverWebhooks: bundles', () => {
  it('sends every event of a bundle and logs them in one write', async () => {
    const f = fakes();
    const res = await deliverWebhooks([rec(bundle([1, 2, 3]), 1, 'b1')], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted.map((p) => p.headers['webhook-id']).sort()).toEqual(['evt-12-1', 'evt-12-2', 'evt-12-3']);
    expect(f.logs).toHaveLength(1);
    expect(f.logs[0].map((a) => [a.event_id, a.attempt, a.outcome])).toEqual(
      expect.arrayContaining([
        ['evt-12-1', 1, 'delivered'],
        ['evt-12-2', 1, 'delivered'],
        ['evt-12-3', 1, 'delivered'],
      ]),
    );
  });

  it('acknowledges the bundle and queues a failed event again on its own, after the first backoff', async () => {
    // Arrange: the second POST fails
    const f = fakes({ status: (n) => (n === 2 ? 503 : 200) });
    // Act
    const res = await deliverWebhooks([rec(bundle([1, 2, 3]), 1, 'b1')], f.deps);
    // Assert
    expect(res.batchItemFailures).toEqual([]);
    const failedId = f.own[0].event_id;
    expect(f.own).toEqual([expect.objectContaining({ attempt: 1, outcome: 'failed', status: 503 })]);
    expect(f.requeued).toEqual([
      {
        delaySeconds: 5,
        body: expect.objectContaining({
          kind: 'webhook',
          event_id: failedId,
          task_id: 12,
          attempts_before: 1,
        }),
      },
    ]);
    expect(f.logs[0].map((a) => a.event_id)).not.toContain(failedId);
  });

  it('counts the bundle attempt in a queued event: seven attempts in all, then the dead-letter queue', async () => {
    // Arrange: the event a bundle queued again (attempt 1 was in the bundle)
    const f = fakes({ status: 500 });
    const m: WebhookMessage = { ...message(2), attempts_before: 1 };
    // Act: its receive 1 is attempt 2, receive 6 the last (attempt 7), receive 7 makes none
    const second = await deliverWebhooks([rec(m, 1, 'q')], f.deps);
    const last = await deliverWebhooks([rec(m, 6, 'q')], f.deps);
    const beyond = await deliverWebhooks([rec(m, 7, 'q')], f.deps);
    // Assert
    expect(f.own.map((a) => a.attempt)).toEqual([2, 7]);
    expect(f.delays).toEqual([
      ['rh-q', 30],
      ['rh-q', 0],
      ['rh-q', 0],
    ]);
    expect(f.posted).toHaveLength(2);
    for (const r of [second, last, beyond]) expect(r.batchItemFailures).toEqual([{ itemIdentifier: 'q' }]);
  });

  it('returns the whole bundle when its retries cannot be queued; received again, it sends only the undelivered', async () => {
    // Arrange: event 2 fails once, and the queue refuses the retry
    const f = fakes({ status: (n) => (n === 2 ? 500 : 200) });
    f.failRequeue(1);
    const b = bundle([1, 2, 3]);
    // Act
    const first = await deliverWebhooks([rec(b, 1, 'b1')], f.deps);
    const sentFirst = f.posted.map((p) => p.headers['webhook-id']);
    const again = await deliverWebhooks([rec(b, 2, 'b1')], f.deps);
    // Assert
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: 'b1' }]);
    expect(f.delays).toEqual([['rh-b1', 5]]);
    expect(again.batchItemFailures).toEqual([]);
    const failedId = f.own[0].event_id;
    expect(f.posted.slice(sentFirst.length).map((p) => p.headers['webhook-id'])).toEqual([failedId]);
    expect(f.searches.every(([, searchLog]) => searchLog)).toBe(true);
  });

  it('defers a fresh replay in a bundle once, then sends it unless it was delivered', async () => {
    const f = fakes();
    // Act: a replayed bundle; the event comes back once, deferred
    const res = await deliverWebhooks([rec(bundle([4], 12, { replay_since_ms: 0 }), 1, 'b')], f.deps);
    const [queued] = f.requeued;
    const later = await deliverWebhooks([rec(queued.body, 1, 'd')], f.deps);
    // Assert
    expect(res.batchItemFailures).toEqual([]);
    expect(queued).toEqual({
      delaySeconds: 5,
      body: expect.objectContaining({ event_id: 'evt-12-4', deferred: true, attempts_before: 0 }),
    });
    expect(later.batchItemFailures).toEqual([]);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-12-4']);
    expect(f.requeued).toHaveLength(1);
  });

  it('continues the recorded attempts of a replayed event: attempt 2, retried after the second backoff', async () => {
    // Arrange: attempt 1 of event 7 failed (its retry could not be queued; the producer ran again)
    const f = fakes({ status: 500 });
    f.own.push(failedAttempt('evt-12-7', 1, 1_700_000_000_500));
    // Act: the replay is deferred once, then sent
    await deliverWebhooks([rec(bundle([7], 12, { replay_since_ms: 1_700_000_000_000 }), 1, 'r')], f.deps);
    await deliverWebhooks([rec(f.requeued[0].body, 1, 'd')], f.deps);
    // Assert
    expect(f.own.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(f.requeued).toHaveLength(1);
    expect(f.delays).toEqual([['rh-d', 30]]);
  });

  it('parks a replayed event whose recorded attempts used the retries up; a replay without attempts goes on', async () => {
    // Arrange: event 8 failed seven times since the replay's time; event 9 has no attempt
    const f = fakes({ status: 500 });
    const since = 1_700_000_000_000;
    for (let n = 1; n <= 7; n++) f.own.push(failedAttempt('evt-12-8', n, since + n));
    // Act: the replayed bundle; event 8 comes back on its own, event 9 deferred once; both received
    const first = await deliverWebhooks(
      [rec(bundle([8, 9], 12, { replay_since_ms: since }), 1, 'r')],
      f.deps,
    );
    const eight = f.requeued.find((q) => q.body.event_id === 'evt-12-8');
    const nine = f.requeued.find((q) => q.body.event_id === 'evt-12-9');
    await deliverWebhooks([rec(eight?.body ?? 'x', 1, 'q8'), rec(nine?.body ?? 'x', 1, 'd9')], f.deps);
    // Assert: event 8 is never sent again and goes back untried (to the dead-letter queue); event 9
    // makes its attempt 1
    expect(first.batchItemFailures).toEqual([]);
    expect(eight).toEqual({
      delaySeconds: 0,
      body: expect.objectContaining({ event_id: 'evt-12-8', attempts_before: 7 }),
    });
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-12-9']);
    expect(f.own.slice(7).map((a) => [a.event_id, a.attempt])).toEqual([['evt-12-9', 1]]);
    expect(f.delays).toEqual(
      expect.arrayContaining([
        ['rh-q8', 0],
        ['rh-d9', 5],
      ]),
    );
  });

  it('sends the unordered events of one bundle in parallel', async () => {
    const f = fakes({ postMs: 50 });
    await deliverWebhooks([rec(bundle([1, 2, 3, 4]), 1, 'b')], f.deps);
    expect(f.posted).toHaveLength(4);
    expect(f.inFlight.max).toBe(4);
  });

  it('leaves a bundle with a malformed event to the dead-letter queue, sending none of it', async () => {
    const f = fakes();
    const b = bundle([1, 2]);
    (b.events[1] as { event_id?: string }).event_id = undefined;
    const res = await deliverWebhooks([rec(b, 1, 'bad-bundle')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'bad-bundle' }]);
    expect(f.posted).toHaveLength(0);
  });
});

describe("deliverNow (a producer's first attempt)", () => {
  // Each test its own task: a task whose webhook failed cools off for this module's lifetime.
  it('sends every event of the bundles at once and queues nothing when all are delivered', async () => {
    const f = fakes();
    await deliverNow([bundle([1, 2], 21)], f.deps);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-21-1', 'evt-21-2']);
    expect(f.logs.flat().map((a) => [a.event_id, a.attempt, a.outcome])).toEqual([
      ['evt-21-1', 1, 'delivered'],
      ['evt-21-2', 1, 'delivered'],
    ]);
    expect([f.requeued, f.bundled]).toEqual([[], []]);
  });

  it("queues a failed event on its own after the first backoff, then queues the task's events untried for a while", async () => {
    const f = fakes({ status: (n) => (n === 1 ? 503 : 200) });
    // Act: the first event fails; a later batch of the same task; another task's batch
    await deliverNow([bundle([1, 2], 22)], f.deps);
    const postedFirst = f.posted.length;
    await deliverNow([bundle([3], 22), bundle([1], 23)], f.deps);
    // Assert: attempt 1 recorded, the retry counts it; the cooling task's bundle goes to the queue as is
    expect(f.own).toEqual([expect.objectContaining({ event_id: 'evt-22-1', attempt: 1, outcome: 'failed' })]);
    expect(f.requeued).toEqual([
      {
        delaySeconds: 5,
        body: expect.objectContaining({ kind: 'webhook', event_id: 'evt-22-1', attempts_before: 1 }),
      },
    ]);
    expect(f.bundled).toEqual([bundle([3], 22)]);
    expect(postedFirst).toBe(2);
    expect(f.posted.slice(postedFirst).map((p) => p.headers['webhook-id'])).toEqual(['evt-23-1']);
  });

  it('cools a task off only when its receiver failed, not when the task could not be read', async () => {
    const f = fakes();
    const read = f.deps.getTask;
    f.deps.getTask = async () => {
      throw new Error('throttled');
    };
    await deliverNow([bundle([1], 27)], f.deps);
    f.deps.getTask = read;
    await deliverNow([bundle([2], 27)], f.deps);
    expect(f.own).toEqual([
      expect.objectContaining({ event_id: 'evt-27-1', outcome: 'failed', error: 'internal error' }),
    ]);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-27-2']);
    expect(f.bundled).toEqual([]);
  });

  it('leaves replayed events to the webhook consumer, which looks up whether they went out', async () => {
    const f = fakes();
    const replayed = bundle([1], 24, { replay_since_ms: 1000 });
    await deliverNow([{ ...replayed, events: [...replayed.events, ...bundle([2], 24).events] }], f.deps);
    expect(f.posted.map((p) => p.headers['webhook-id'])).toEqual(['evt-24-2']);
    expect(f.bundled).toEqual([replayed]);
  });

  it('queues, unsent and in order, what a slow receiver leaves after the time budget', async () => {
    // Arrange: a receiver taking 600 ms; five events of one order key (one lane), one without
    const f = fakes({ postMs: 600 });
    const lane = bundle([1, 2, 3, 4, 5], 28, { order_key: 'wf:9' });
    const solo = bundle([6], 28);
    // Act
    await deliverNow([{ ...lane, events: [...lane.events, ...solo.events] }], f.deps);
    // Assert: the lane's first two start within the 1 s budget (at 0 and 600 ms), the rest waits
    expect(f.posted.map((p) => p.headers['webhook-id']).sort()).toEqual(['evt-28-1', 'evt-28-2', 'evt-28-6']);
    expect(f.bundled).toEqual([{ ...lane, events: lane.events.slice(2) }]);
    expect(f.requeued).toEqual([]);
  });

  it('throws when a failed event cannot be queued (the producer runs again), or when queuing what waits fails', async () => {
    const failing = fakes({ status: 500 });
    failing.failRequeue(1);
    await expect(deliverNow([bundle([1], 25)], failing.deps)).rejects.toThrow(/could not queue/);
    // What waits for the queue cannot be queued: the fresh event still goes out, and is recorded, first
    const waiting = fakes();
    waiting.failRequeue(1);
    const mixed = bundle([1], 26, { replay_since_ms: 0 });
    mixed.events.push(...bundle([2], 26).events);
    await expect(deliverNow([mixed], waiting.deps)).rejects.toThrow('queue down');
    expect(waiting.logs.flat().map((a) => [a.event_id, a.outcome])).toEqual([['evt-26-2', 'delivered']]);
  });
});

describe('retryDelaySeconds', () => {
  it('follows the backoff per retry, then 0 once retries are used up', () => {
    const b = [5, 30, 120, 600, 1800, 3600];
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((a) => retryDelaySeconds(a, b))).toEqual([
      5, 30, 120, 600, 1800, 3600, 0, 0,
    ]);
    expect(retryDelaySeconds(1, [])).toBe(0);
  });
});

describe('postJson (real HTTP on 127.0.0.1)', () => {
  let server: Server;
  let base = '';
  let mode: 'ok' | 'slow' | 'redirect' = 'ok';
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (mode === 'slow') return void setTimeout(() => res.end('late'), 400);
      if (mode === 'redirect') return void res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      res.writeHead(200).end('anything');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('returns the status of a fast receiver', async () => {
    mode = 'ok';
    expect(await postJson(new URL(`${base}/h`), {}, '{}', 1000, false)).toEqual({ status: 200 });
  });

  it('times out a slow receiver', async () => {
    mode = 'slow';
    expect(await postJson(new URL(`${base}/h`), {}, '{}', 100, false)).toEqual({
      error: 'timeout after 100 ms',
    });
  });

  it('does not follow redirects', async () => {
    mode = 'redirect';
    expect(await postJson(new URL(`${base}/h`), {}, '{}', 1000, false)).toEqual({ status: 302 });
  });

  it('reports a refused connection', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    expect(await postJson(new URL(`http://127.0.0.1:${port}/`), {}, '{}', 1000, false)).toEqual({
      error: 'ECONNREFUSED',
    });
  });

  it('refuses at connect time a name that resolves to a blocked address', async () => {
    const res = await postJson(new URL(`http://localhost:${new URL(base).port}/h`), {}, '{}', 1000, true);
    expect(res.blocked).toBe(true);
    expect(res.error).toMatch(/is not public/);
  });
});

describe('an event redriven from the dead-letter queue', () => {
  const redriven = (made: number): WebhookMessage => ({
    ...message(1),
    attempts_before: made,
    redriven_after: made,
  });

  it.each([
    [1, 8, 5],
    [6, 13, 3600],
    [7, 14, 0],
  ])(
    'numbers receive %i as attempt %i and retries it with a fresh budget (visibility %i s)',
    async (receive, attempt, seconds) => {
      // Arrange: 7 attempts were made before the redrive
      const f = fakes({ status: 503 });
      // Act
      const res = await deliverWebhooks([rec(redriven(7), receive, 'm1')], f.deps);
      // Assert
      expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
      expect(f.posted).toHaveLength(1);
      expect(f.own[0]).toMatchObject({ attempt, outcome: 'failed', status: 503 });
      expect(f.delays).toEqual([['rh-m1', seconds]]);
    },
  );

  it('is left untried once its new budget is used up, like any message', async () => {
    // Arrange
    const f = fakes({ status: 503 });
    // Act
    await deliverWebhooks([rec(redriven(7), 8, 'm1')], f.deps);
    // Assert
    expect(f.posted).toEqual([]);
    expect(f.delays).toEqual([['rh-m1', 0]]);
  });

  it('records a delivery after a redrive as an attempt of its own, with the same webhook-id', async () => {
    // Arrange
    const f = fakes({ status: 200 });
    // Act
    await deliverWebhooks([rec(redriven(7), 1, 'm1')], f.deps);
    // Assert
    expect(f.posted[0].headers['webhook-id']).toBe('evt-12-1');
    expect(f.own).toMatchObject([{ attempt: 8, outcome: 'delivered' }]);
    expect(f.logs).toEqual([]);
  });
});

describe('sendEventNow (test-send)', () => {
  it('makes one signed attempt, records a delivered one in the log and returns it', async () => {
    // Arrange
    const f = fakes({ status: 200 });
    // Act
    const attempt = await sendEventNow(message(5, 12, 'PING'), f.deps);
    // Assert
    expect(attempt).toMatchObject({ event_id: 'evt-12-5', attempt: 1, outcome: 'delivered', status: 200 });
    expect(f.posted).toHaveLength(1);
    expect(f.logs).toEqual([[attempt]]);
    expect(f.delays).toEqual([]);
  });

  it('records a failed attempt on its own and does not retry it', async () => {
    // Arrange
    const f = fakes({ status: 500 });
    // Act
    const attempt = await sendEventNow(message(6, 12, 'PING'), f.deps);
    // Assert
    expect(attempt).toMatchObject({ outcome: 'failed', status: 500, error: 'HTTP 500' });
    expect(f.own).toEqual([attempt]);
    expect(f.requeued).toEqual([]);
    expect(f.delays).toEqual([]);
  });
});
