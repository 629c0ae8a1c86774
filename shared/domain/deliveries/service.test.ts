import { describe, expect, it } from 'vitest';
import { ConflictError, ValidationError } from '../errors.ts';
import type { AttemptRecord, NotifyAttemptsPosition } from '../notifications/repository.ts';
import type { Task } from '../tasks/model.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';
import type { DeliveryLogPosition } from '../webhooks/repository-listing.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import type { DeliveryView } from './responses.ts';
import { type DeliveriesDeps, listDeliveries, mergePages, type SourcePage, testWebhook } from './service.ts';

const sk = (ms: number, id: string) => `${String(ms).padStart(13, '0')}#${id}`;

describe('mergePages', () => {
  const page = (source: 'w' | 'l' | 'n0', keys: number[], done: boolean): SourcePage<string> => ({
    source,
    done,
    rows: keys.map((k, i) => ({ orderMs: k, after: sk(k, `${source}${i}`), row: `${source}:${k}` })),
  });

  it.each([
    {
      name: 'takes the newest rows across sources and moves each source past what it gave',
      pages: [page('w', [9, 5, 1], true), page('l', [8, 7, 2], false)],
      limit: 3,
      rows: ['w:9', 'l:8', 'l:7'],
      positions: { w: sk(9, 'w0'), l: sk(7, 'l1') },
    },
    {
      name: 'marks a source done only when every row it returned was taken',
      pages: [page('w', [9], true), page('l', [8, 7], true)],
      limit: 2,
      rows: ['w:9', 'l:8'],
      positions: { w: 'done', l: sk(8, 'l0') },
    },
    {
      name: 'leaves a source that gave nothing taken unchanged',
      pages: [page('w', [9, 8], false), page('n0', [1], false)],
      limit: 2,
      rows: ['w:9', 'w:8'],
      positions: { w: sk(8, 'w1') },
    },
    {
      name: 'breaks ties by the order of the sources',
      pages: [page('w', [5], true), page('l', [5], true)],
      limit: 1,
      rows: ['w:5'],
      positions: { w: 'done' },
    },
    {
      name: 'an empty done source is done',
      pages: [page('w', [], true)],
      limit: 5,
      rows: [],
      positions: { w: 'done' },
    },
  ])('$name', ({ pages, limit, rows, positions }) => {
    // Act
    const merged = mergePages(pages, limit);
    // Assert
    expect(merged.rows).toEqual(rows);
    expect(merged.positions).toEqual(positions);
  });
});

describe('cursors', () => {
  it('round-trips a value', () => {
    const isAny = (v: unknown): v is { a: number } => typeof v === 'object';
    expect(decodeCursor(encodeCursor({ a: 1 }), isAny)).toEqual({ a: 1 });
  });

  it.each(['not a cursor!', Buffer.from('{"a":').toString('base64url'), encodeCursor({ a: 'x' })])(
    'refuses %s with 422 on cursor',
    (cursor) => {
      const isA = (v: unknown): v is { a: number } => typeof (v as { a?: unknown }).a === 'number';
      expect(() => decodeCursor(cursor, isA)).toThrowError(ValidationError);
      try {
        decodeCursor(cursor, isA);
      } catch (err) {
        expect((err as ValidationError).errors).toEqual([
          { field: 'cursor', message: 'is not a valid cursor' },
        ]);
      }
    },
  );
});

/** In-memory sources that page like the repositories (positions are sort keys + entries read). */
function world() {
  const own: WebhookAttempt[] = [];
  /** Log items: sort key (first attempt) and entries. */
  const log: { sk: string; entries: WebhookAttempt[] }[] = [];
  /** Job items per shard: sort key (last run) and attempts. */
  const shards: { sk: string; attempts: AttemptRecord[] }[][] = [[], [], [], []];
  const calls: string[] = [];
  const webhook = (id: string, at: number, attempt = 1): WebhookAttempt => ({
    event_id: id,
    task_id: 7,
    attempt,
    outcome: attempt === 1 ? 'failed' : 'delivered',
    event: 'ALARM',
    type: 'compress_disable',
    duration_ms: 3,
    at_ms: at,
    at: Math.floor(at / 1000),
  });
  const notify = (job: string, at: number, seq = 0): AttemptRecord => ({
    job_id: job,
    task_id: 7,
    channel: 'email',
    scene: 'not_compress',
    target: 'uid 1 a***@example.com',
    outcome: 'delivered',
    code: '250',
    attempt: 1,
    duration_ms: 5,
    at: Math.floor(at / 1000),
    at_ms: at,
    seq,
    ttl: 0,
  });
  const deps: DeliveriesDeps = {
    taskForUser: async (_uid, taskId) => ({ id: taskId }) as Task,
    nowMs: () => 10_000_000,
    pageOwn: async (_t, limit, after) => {
      calls.push('w');
      const rows = own
        .map((a) => ({ attempt: a, orderMs: a.at_ms, after: sk(a.at_ms, `${a.event_id}#${a.attempt}`) }))
        .sort((a, b) => b.after.localeCompare(a.after))
        .filter((r) => !after || r.after < after);
      return { rows: rows.slice(0, limit), done: rows.length <= limit };
    },
    pageLog: async (_t, limit, _now, after?: DeliveryLogPosition) => {
      calls.push('l');
      const rows = [];
      for (const item of [...log].sort((a, b) => b.sk.localeCompare(a.sk))) {
        if (after && item.sk > after.sk) continue;
        const entries = [...item.entries].sort((a, b) => b.at_ms - a.at_ms);
        for (let i = after && item.sk === after.sk ? after.read : 0; i < entries.length; i++) {
          rows.push({
            attempt: entries[i],
            orderMs: Number(item.sk.slice(0, 13)),
            after: { day: 0, sk: item.sk, read: i + 1 },
          });
          if (rows.length >= limit) return { rows, done: false };
        }
      }
      return { rows, done: true };
    },
    pageNotify: async (_t, shard, limit, after?: NotifyAttemptsPosition) => {
      calls.push(`n${shard}`);
      const rows = [];
      for (const item of [...shards[shard]].sort((a, b) => b.sk.localeCompare(a.sk))) {
        if (after && item.sk > after.sk) continue;
        const attempts = [...item.attempts].sort((a, b) => b.at_ms - a.at_ms);
        for (let i = after && item.sk === after.sk ? after.read : 0; i < attempts.length; i++) {
          rows.push({
            attempt: attempts[i],
            orderMs: Number(item.sk.slice(0, 13)),
            after: { sk: item.sk, read: i + 1 },
          });
          if (rows.length >= limit) return { rows, done: false };
        }
      }
      return { rows, done: true };
    },
  };
  return { own, log, shards, calls, deps, webhook, notify };
}

function seeded() {
  const w = world();
  w.own.push(w.webhook('e1', 1_000, 1), w.webhook('e1', 2_000, 2), w.webhook('e3', 9_000, 1));
  w.log.push(
    { sk: sk(1_500, 'a'), entries: [w.webhook('e2', 1_500), w.webhook('e4', 1_600)] },
    { sk: sk(8_000, 'b'), entries: [w.webhook('e5', 8_000)] },
  );
  w.shards[0].push({ sk: sk(5_000, 'j1'), attempts: [w.notify('j1', 3_000, 0), w.notify('j1', 5_000, 0)] });
  w.shards[2].push({ sk: sk(7_000, 'j2'), attempts: [w.notify('j2', 7_000, 0)] });
  return w;
}

async function allPages(deps: DeliveriesDeps, kind: 'webhook' | 'notify' | 'all', limit: number) {
  const seen: DeliveryView[] = [];
  const cursors: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await listDeliveries(
      { uid: 1, task_id: 7, kind, limit, ...(cursor ? { cursor } : {}) },
      deps,
    );
    expect(page.deliveries.length).toBeLessThanOrEqual(limit);
    seen.push(...page.deliveries);
    cursor = page.next_cursor || undefined;
    if (cursor) cursors.push(cursor);
  } while (cursor && cursors.length < 50);
  return { seen, pages: cursors.length + 1 };
}

const label = (v: DeliveryView) => `${v.id}@${v.at_ms}`;

describe('listDeliveries', () => {
  it('pages through every attempt of both kinds exactly once, newest first by each source order', async () => {
    // Arrange
    const w = seeded();
    // Act
    const { seen, pages } = await allPages(w.deps, 'all', 2);
    // Assert: 3 own + 3 logged + 3 notification attempts, in the merged order
    expect(seen.map(label)).toEqual([
      'e3@9000',
      'e5@8000',
      'j2@7000',
      'j1@5000',
      'j1@3000',
      'e1@2000',
      'e4@1600',
      'e2@1500',
      'e1@1000',
    ]);
    expect(pages).toBe(5);
  });

  it.each([1, 3, 4, 100])('gives the same list whatever the page size (%i)', async (limit) => {
    const w = seeded();
    const one = (await allPages(w.deps, 'all', 100)).seen.map(label);
    expect((await allPages(w.deps, 'all', limit)).seen.map(label)).toEqual(one);
  });

  it('reads only the webhook sources for kind=webhook, and shows each attempt in its view', async () => {
    // Arrange
    const w = seeded();
    // Act
    const page = await listDeliveries({ uid: 1, task_id: 7, kind: 'webhook', limit: 100 }, w.deps);
    // Assert
    expect(new Set(w.calls)).toEqual(new Set(['w', 'l']));
    expect(page.next_cursor).toBe('');
    expect(page.deliveries).toHaveLength(6);
    expect(page.deliveries[0]).toEqual({
      kind: 'webhook',
      id: 'e3',
      event: 'ALARM',
      type: 'compress_disable',
      channel: 'webhook',
      attempt: 1,
      outcome: 'failed',
      duration_ms: 3,
      at: 9,
      at_ms: 9000,
    });
  });

  it('reads only the notification shards for kind=notify', async () => {
    const w = seeded();
    const page = await listDeliveries({ uid: 1, task_id: 7, kind: 'notify', limit: 100 }, w.deps);
    expect(new Set(w.calls)).toEqual(new Set(['n0', 'n1', 'n2', 'n3']));
    expect(page.deliveries.map((d) => d.kind)).toEqual(['notify', 'notify', 'notify']);
    expect(page.deliveries[0]).toMatchObject({
      id: 'j2',
      scene: 'not_compress',
      channel: 'email',
      code: '250',
    });
  });

  it('stops asking a source once it is done', async () => {
    // Arrange: one page of 4 exhausts the notification shards n1..n3 (empty)
    const w = seeded();
    const first = await listDeliveries({ uid: 1, task_id: 7, kind: 'all', limit: 4 }, w.deps);
    w.calls.length = 0;
    // Act
    await listDeliveries({ uid: 1, task_id: 7, kind: 'all', limit: 4, cursor: first.next_cursor }, w.deps);
    // Assert
    expect(w.calls).not.toContain('n1');
    expect(w.calls).not.toContain('n3');
  });

  it.each([
    ['another task', { task_id: 8 }],
    ['another kind', { kind: 'notify' as const }],
  ])('refuses a cursor of %s with 422', async (_name, change) => {
    const w = seeded();
    const first = await listDeliveries({ uid: 1, task_id: 7, kind: 'all', limit: 1 }, w.deps);
    await expect(
      listDeliveries(
        { uid: 1, task_id: 7, kind: 'all', limit: 1, cursor: first.next_cursor, ...change },
        w.deps,
      ),
    ).rejects.toThrowError(/cursor belongs to another listing/);
  });

  it.each([
    ['a position of the wrong shape', { p: { w: 'DROP TABLE' } }],
    ['a sort key that is no listing key', { p: { n0: { s: '0', r: 0 } } }],
    ['a sort key with a lone surrogate', { p: { n1: { s: sk(5_000, '\ud800'), r: 0 } } }],
    ['a sort key beyond 1,024 bytes', { p: { w: sk(5_000, 'x'.repeat(1_100)) } }],
    ['a log day other than its sort key time', { p: { l: { d: 3, s: sk(1_500, 'a'), r: 1 } } }],
    ['a negative count', { p: { l: { d: 0, s: sk(1_500, 'a'), r: -1 } } }],
    ['a count beyond any item', { p: { n2: { s: sk(7_000, 'j2'), r: 2 ** 40 } } }],
    ['a source done twice', { d: ['n0', 'n0', 'n1', 'n2'] }],
    ['a source of another kind', { k: 'webhook', d: ['n0'] }],
    ['a string task id', { t: '7' }],
  ])('refuses a cursor with %s', async (_label, change) => {
    const w = seeded();
    const bad = encodeCursor({ v: 1, t: 7, k: 'all', p: {}, d: [], ...change });
    await expect(listDeliveries({ uid: 1, task_id: 7, cursor: bad }, w.deps)).rejects.toThrowError(
      'cursor is not a valid cursor',
    );
    expect(w.calls).toEqual([]);
  });
});

describe('testWebhook', () => {
  const task = (webhook?: string) => ({ id: 7, receiver: { channels: webhook ? { webhook } : {} } }) as Task;

  it('409s a task without a webhook, sending nothing', async () => {
    let sent = 0;
    const deps = {
      taskForUser: async () => task(),
      send: async () => {
        sent++;
        throw new Error('unreachable');
      },
      now: () => 100,
    };
    await expect(testWebhook({ uid: 1, task_id: 7 }, deps)).rejects.toThrowError(ConflictError);
    await expect(testWebhook({ uid: 1, task_id: 7 }, deps)).rejects.toThrowError('task [7] has no webhook');
    expect(sent).toBe(0);
  });

  it('sends a PING with a fresh webhook-id, needs write permission and returns the attempt', async () => {
    // Arrange
    const asked: string[] = [];
    const deps = {
      taskForUser: async (_uid: number, _t: number, access?: 'read' | 'write') => {
        asked.push(access ?? 'read');
        return task('https://hooks.example.com/x?token=t');
      },
      send: async (m: { event_id: string; body: { event: string } }) => ({
        event_id: m.event_id,
        task_id: 7,
        attempt: 1,
        outcome: 'delivered' as const,
        event: m.body.event,
        type: 'ping',
        target: 'https://hooks.example.com',
        status: 200,
        duration_ms: 12,
        at_ms: 100_000,
        at: 100,
      }),
      now: () => 100,
    };
    // Act
    const out = await testWebhook({ uid: 1, task_id: 7 }, deps as never);
    // Assert
    expect(asked).toEqual(['write']);
    expect(out.webhook_id).toMatch(/^7:test:[0-9a-f-]{36}$/);
    expect(out).toMatchObject({
      event: 'PING',
      outcome: 'delivered',
      status: 200,
      duration_ms: 12,
      target: 'https://hooks.example.com',
    });
  });
});
