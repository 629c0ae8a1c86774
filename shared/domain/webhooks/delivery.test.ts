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

interface Claim {
  seq: number;
  leaseUntil?: number;
  delivered?: boolean;
}

function fakes(opts: { task?: Task; status?: number; claims?: Map<string, Claim>; refuse?: boolean } = {}) {
  const claims = opts.claims ?? new Map<string, Claim>();
  const released: [string, boolean][] = [];
  const posted: Posted[] = [];
  const recorded: WebhookAttempt[] = [];
  const delays: [string, number][] = [];
  const taskReads: [number, number | undefined][] = [];
  const deps: DeliveryDeps = {
    getTask: async (id, notOlderThan) => {
      taskReads.push([id, notOlderThan]);
      return 'task' in opts ? opts.task : task('https://hooks.example.com/in?token=abc');
    },
    claim: async (eventId, _taskId, now, leaseMs) => {
      const c = claims.get(eventId) ?? { seq: 0 };
      if (c.delivered) return { claimed: false, delivered: true };
      if (c.leaseUntil !== undefined && c.leaseUntil >= now) return { claimed: false, delivered: false };
      c.seq += 1;
      c.leaseUntil = now + leaseMs;
      claims.set(eventId, c);
      return { claimed: true, seq: c.seq };
    },
    release: async (eventId, delivered) => {
      released.push([eventId, delivered]);
      const c = claims.get(eventId) as Claim;
      c.leaseUntil = undefined;
      if (delivered) c.delivered = true;
    },
    recordAttempt: async (a) => {
      recorded.push(a);
    },
    checkUrl: async (url) =>
      opts.refuse ? { ok: false, reason: 'not public' } : { ok: true, url: new URL(url) },
    post: async (url, headers, body) => {
      posted.push({ url: url.href, headers, body });
      return { status: opts.status ?? 200 };
    },
    delayRetry: async (handle, seconds) => {
      delays.push([handle, seconds]);
    },
  };
  return { deps, posted, recorded, delays, taskReads, claims, released };
}

describe('deliverWebhooks', () => {
  it('POSTs the stored body with the contract headers and a verifiable signature', async () => {
    // Arrange
    const f = fakes();
    const m = message(1);
    // Act
    const res = await deliverWebhooks([rec(m)], f.deps);
    // Assert
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(1);
    const { headers, body, url } = f.posted[0];
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
    expect(f.recorded).toEqual([
      expect.objectContaining({
        event_id: 'evt-12-1',
        task_id: 12,
        attempt: 1,
        outcome: 'delivered',
        status: 200,
        target: 'https://hooks.example.com',
        event: 'ALARM',
        type: 'compress_disable',
      }),
    ]);
    expect(JSON.stringify(f.recorded)).not.toContain('token=abc');
  });

  it.each([
    [1, 5],
    [2, 30],
    [6, 3600],
    [7, 0],
  ])('on failure of attempt %i reports the record and sets visibility %i s', async (attempt, seconds) => {
    const f = fakes({ status: 500 });
    const res = await deliverWebhooks([rec(message(1), attempt, 'm1')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(f.delays).toEqual([['rh-m1', seconds]]);
    expect(f.recorded[0]).toMatchObject({ outcome: 'failed', status: 500, error: 'HTTP 500', attempt });
  });

  it('treats any status other than 200 as a failure', async () => {
    for (const status of [201, 204, 302, 404]) {
      const f = fakes({ status });
      const res = await deliverWebhooks([rec(message(1))], f.deps);
      expect(res.batchItemFailures).toHaveLength(1);
    }
  });

  it('does not send an event that was already delivered', async () => {
    const f = fakes({ claims: new Map([['evt-12-1', { seq: 1, delivered: true }]]) });
    const res = await deliverWebhooks([rec(message(1), 2)], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(0);
    expect(f.recorded).toHaveLength(0);
  });

  it('retries a message whose event is claimed but not delivered, without sending it now', async () => {
    const f = fakes({ claims: new Map([['evt-12-1', { seq: 1, leaseUntil: Number.MAX_SAFE_INTEGER }]]) });
    const res = await deliverWebhooks([rec(message(1), 1, 'm1')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(f.delays).toEqual([['rh-m1', 5]]);
    expect(f.posted).toHaveLength(0);
  });

  it('a failed attempt whose claim could not be freed is still retried, then delivered', async () => {
    // Arrange: the receiver fails once; freeing the claim after that failure fails too
    const f = fakes({ status: 500 });
    const release = f.deps.release;
    f.deps.release = async () => {
      throw new Error('table unavailable');
    };
    await deliverWebhooks([rec(message(1), 1, 'm1')], f.deps);
    f.deps.release = release;
    // Act: the retry arrives while the stale lease still holds, then again after it ran out
    const early = await deliverWebhooks([rec(message(1), 2, 'm1')], f.deps);
    (f.claims.get('evt-12-1') as Claim).leaseUntil = 0;
    f.deps.post = async () => ({ status: 200 });
    const late = await deliverWebhooks([rec(message(1), 3, 'm1')], f.deps);
    // Assert: never acknowledged before the event was delivered
    expect(early.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(late.batchItemFailures).toEqual([]);
    expect(f.recorded.map((r) => r.outcome)).toEqual(['failed', 'delivered']);
  });

  it('sends duplicates in one batch once, and numbers attempts per event across messages', async () => {
    // Arrange: two copies of one event, then a failing receiver for a third copy later
    const f = fakes();
    // Act
    await deliverWebhooks([rec(message(1), 1, 'a'), rec(message(1), 1, 'b')], f.deps);
    // Assert
    expect(f.posted).toHaveLength(1);
    expect(f.released).toEqual([['evt-12-1', true]]);
    expect(f.recorded.map((r) => [r.seq, r.outcome])).toEqual([[1, 'delivered']]);
  });

  it('frees the claim of a failed attempt so the retry can send, and numbers it after the first', async () => {
    const f = fakes({ status: 500 });
    await deliverWebhooks([rec(message(1), 1)], f.deps);
    await deliverWebhooks([rec(message(1), 2)], f.deps);
    expect(f.posted).toHaveLength(2);
    expect(f.recorded.map((r) => [r.seq, r.attempt, r.outcome])).toEqual([
      [1, 1, 'failed'],
      [2, 2, 'failed'],
    ]);
    expect(f.released).toEqual([
      ['evt-12-1', false],
      ['evt-12-1', false],
    ]);
  });

  it.each([
    ['a deleted task', { task: undefined }, 'skipped', 'task not found'],
    ['a task without a webhook', { task: task() }, 'skipped', 'task has no webhook'],
    ['a refused URL', { refuse: true }, 'refused', 'not public'],
  ])('acknowledges without sending for %s', async (_name, opts, outcome, error) => {
    const f = fakes(opts);
    const res = await deliverWebhooks([rec(message(1))], f.deps);
    expect(res.batchItemFailures).toEqual([]);
    expect(f.posted).toHaveLength(0);
    expect(f.recorded).toEqual([expect.objectContaining({ outcome, error })]);
  });

  it('leaves a malformed message to the dead-letter queue', async () => {
    const f = fakes();
    const res = await deliverWebhooks([rec('{nope', 1, 'junk')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'junk' }]);
    expect(f.posted).toHaveLength(0);
  });

  it('sends the events of one task in order, and reads PING tasks fresh', async () => {
    const f = fakes();
    const batch = [
      rec(message(1)),
      rec(message(1, 13)),
      rec(message(2)),
      rec(message(3, 12, 'PING')),
      rec(message(2, 13)),
    ];
    await deliverWebhooks(batch, f.deps);
    const ofTask12 = f.posted
      .filter((p) => p.headers['webhook-id'].startsWith('evt-12-'))
      .map((p) => p.headers['webhook-id']);
    const ofTask13 = f.posted
      .filter((p) => p.headers['webhook-id'].startsWith('evt-13-'))
      .map((p) => p.headers['webhook-id']);
    expect(ofTask12).toEqual(['evt-12-1', 'evt-12-2', 'evt-12-3']);
    expect(ofTask13).toEqual(['evt-13-1', 'evt-13-2']);
    expect(f.taskReads.filter(([, n]) => n !== undefined)).toEqual([[12, 1700000000]]);
  });

  it('retries (with backoff) when the claim cannot be written', async () => {
    const f = fakes();
    f.deps.claim = async () => {
      throw new Error('throttled');
    };
    const res = await deliverWebhooks([rec(message(1), 3, 'x')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'x' }]);
    expect(f.delays).toEqual([['rh-x', 120]]);
    expect(f.posted).toHaveLength(0);
  });

  it('frees the claim and retries when the task cannot be read', async () => {
    const f = fakes();
    f.deps.getTask = async () => {
      throw new Error('throttled');
    };
    const res = await deliverWebhooks([rec(message(1), 1, 'y')], f.deps);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'y' }]);
    expect(f.released).toEqual([['evt-12-1', false]]);
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
