import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import type { WebhookMessage } from '../../messaging/messages.ts';
import type { Task } from '../tasks/model.ts';
import {
  type DeliveryDeps,
  type DeliveryRecord,
  deliverWebhooks,
  postJson,
  retryDelaySeconds,
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

function rec(m: WebhookMessage | string, receiveCount = 1, id?: string): DeliveryRecord {
  const body = typeof m === 'string' ? m : JSON.stringify(m);
  return {
    messageId: id ?? (typeof m === 'string' ? 'bad' : m.event_id),
    receiptHandle: `rh-${id}`,
    body,
    receiveCount,
  };
}

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
    wasDelivered: async (eventId, _taskId, sinceMs) =>
      [...own, ...logs.flat()].some(
        (a) => a.event_id === eventId && a.outcome === 'delivered' && a.at_ms >= sinceMs,
      ),
    delayRetry: async (handle, seconds) => {
      delays.push([handle, seconds]);
    },
  };
  return { deps, posted, own, logs, delays, taskReads, inFlight };
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
