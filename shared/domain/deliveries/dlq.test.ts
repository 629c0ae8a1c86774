import { describe, expect, it } from 'vitest';
import type { DeadLetter, Move } from '../../messaging/dead-letters.ts';
import type { QueueName } from '../../contracts/messages.ts';
import type { DeadDueItem } from '../due/repository.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { carriedBy, failuresOf } from './dead-letter.ts';
import { type DlqDeps, listDeadLetters, redriveBody, redriveDeadLetters } from './dlq.ts';

/** A webhook message whose content holds a number JavaScript cannot hold exactly. */
const webhookBody = (id: string, taskId = 7) =>
  `{"kind":"webhook","event_id":"${id}","task_id":${taskId},"created_at":1,` +
  '"body":{"event":"ALARM","type":"compress_disable","data":{"n":12345678901234567890},"extra":{}}}';

const letter = (id: string, body: string): DeadLetter => ({
  messageId: id,
  receiptHandle: `rh-${id}`,
  body,
  receiveCount: 8,
  sentAt: 100,
});

describe('carriedBy', () => {
  it.each([
    [
      'webhook',
      webhookBody('e1'),
      { kind: 'webhook', task_id: 7, event_id: 'e1', event: 'ALARM', type: 'compress_disable' },
    ],
    [
      'webhook',
      JSON.stringify({
        kind: 'webhooks',
        task_id: 7,
        created_at: 1,
        events: [{ event_id: 'a', body: { event: 'PING' } }],
      }),
      { kind: 'webhooks', task_id: 7, events: [{ event_id: 'a', event: 'PING' }] },
    ],
    [
      'notify',
      JSON.stringify({
        kind: 'notify',
        job_id: '7:u:not_compress:dinggroup:default',
        task_id: 7,
        scene: 'not_compress',
        channel: 'dinggroup',
        robots: [{ webhook: 'SECRET-TOKEN', secret: 'SEC' }],
        context: {},
      }),
      {
        kind: 'notify',
        task_id: 7,
        job_id: '7:u:not_compress:dinggroup:default',
        scene: 'not_compress',
        channel: 'dinggroup',
        robots: 1,
      },
    ],
    [
      'alarm',
      JSON.stringify({
        kind: 'alarm',
        uuid: 'u',
        task_id: 7,
        level: 2,
        ctn: { a: 1 },
        notice_time: 5,
        reported_at: 6,
      }),
      { kind: 'alarm', task_id: 7, uuid: 'u', level: 2, notice_time: 5, reported_at: 6 },
    ],
    ['alarm', 'poison', { kind: 'malformed' }],
    ['notify', JSON.stringify({ kind: 'notify', task_id: 7 }), { kind: 'malformed', task_id: 7 }],
  ])('reads a %s dead letter without its secrets or content', (queue, body, carried) => {
    const out = carriedBy(queue as Exclude<QueueName, 'due'>, body);
    expect(out).toEqual(carried);
    expect(JSON.stringify(out)).not.toMatch(/SECRET|SEC"|ctn/);
  });
});

describe('failuresOf', () => {
  it('counts attempts and gives the first and last failure with the last reason', () => {
    const at = (n: number) => ({ at: n, at_ms: n * 1000 });
    const out = failuresOf([
      { outcome: 'failed', attempt: 2, status: 503, error: 'HTTP 503', target: 'http://h', ...at(20) },
      { outcome: 'failed', attempt: 1, error: 'timeout after 200 ms', ...at(10) },
      { outcome: 'delivered', attempt: 3, status: 200, ...at(30) },
    ]);
    expect(out).toEqual({
      attempts: 3,
      first_failure_at: 10,
      last_failure_at: 20,
      reason: { outcome: 'failed', attempt: 2, status: 503, error: 'HTTP 503', target: 'http://h', at: 20 },
    });
  });

  it('counts attempts made, not their records (targets of one run, an attempt recorded twice)', () => {
    const at = (n: number) => ({ at: n, at_ms: n * 1000 });
    const out = failuresOf([
      { outcome: 'failed', attempt: 1, target: 'uid 1', ...at(10) },
      { outcome: 'delivered', attempt: 1, target: 'uid 2', ...at(10) },
      { outcome: 'failed', attempt: 2, target: 'uid 1', ...at(20) },
      { outcome: 'failed', attempt: 2, target: 'uid 1', ...at(21) },
    ]);
    expect(out).toMatchObject({ attempts: 2, first_failure_at: 10, last_failure_at: 21 });
  });

  it('uses a notification attempt detail and code', () => {
    const out = failuresOf([
      { outcome: 'rejected', attempt: 1, code: 'smtp_550', detail: 'no mailbox', at: 1, at_ms: 1 },
    ]);
    expect(out.reason).toMatchObject({ code: 'smtp_550', error: 'no mailbox' });
  });
});

describe('redriveBody', () => {
  const deps = {
    attemptsOfEvent: async () => [
      { outcome: 'failed', attempt: 6, at: 1, at_ms: 1 },
      { outcome: 'failed', attempt: 7, at: 2, at_ms: 2 },
    ],
    lastAttemptOfJob: async () => 7,
  };

  it('numbers a webhook event on from its attempts and gives it its retries again, digits intact', async () => {
    const body = await redriveBody('webhook', letter('m', webhookBody('e1')), deps);
    expect(body).toContain('"n":12345678901234567890');
    expect(JSON.parse(body)).toMatchObject({ event_id: 'e1', attempts_before: 7, redriven_after: 7 });
  });

  it('numbers a job on from its attempts and gives it its retries again', async () => {
    const job = JSON.stringify({
      kind: 'notify',
      job_id: 'j',
      task_id: 7,
      scene: 'recovery',
      channel: 'sms',
    });
    expect(JSON.parse(await redriveBody('notify', letter('m', job), deps))).toMatchObject({
      attempts_before: 7,
      redriven_after: 7,
    });
  });

  it('sends an alarm back byte for byte', async () => {
    const alarm = '{"kind":"alarm","uuid":"u","task_id":7,"ctn":{"id":12345678901234567890}}';
    expect(await redriveBody('alarm', letter('m', alarm), deps)).toBe(alarm);
  });
});

/** A dead-letter queue in memory: scans hide what they read until released. */
function world(letters: DeadLetter[], opts: { admin?: boolean } = {}) {
  const queue = [...letters];
  const hidden = new Set<string>();
  const moved: Move[] = [];
  const released: string[] = [];
  const revived: string[] = [];
  const dead: DeadDueItem[] = [
    {
      kind: 'compress-flush',
      ref: '7:m:1',
      due_at: 50,
      payload: { task_id: 7 },
      attempts: 10,
      error: 'boom',
      buried_at: 60,
    },
    {
      kind: 'workflow-remind',
      ref: '3:0:1',
      due_at: 40,
      payload: { workflow_id: 3 },
      attempts: 10,
      error: 'x',
      buried_at: 70,
    },
  ];
  const deps: DlqDeps = {
    requireAdmin: async (uid) => {
      if (opts.admin === false)
        throw new ForbiddenError(`user [${uid}] is not a super administrator (role 9)`);
      return { user: { uid } as never, admin: true };
    },
    scan: async (_q, max, wanted = () => true, want = Number.POSITIVE_INFINITY) => {
      const messages: DeadLetter[] = [];
      let found = 0;
      for (const l of queue) {
        if (messages.length >= max || found >= want) return { messages, complete: false };
        if (hidden.has(l.messageId)) continue;
        hidden.add(l.messageId);
        messages.push(l);
        if (wanted(l)) found++;
      }
      return { messages, complete: true };
    },
    release: async (_q, ls) => {
      for (const l of ls) {
        hidden.delete(l.messageId);
        released.push(l.messageId);
      }
    },
    move: async (_q, moves) => {
      moved.push(...moves);
      for (const m of moves) {
        queue.splice(queue.indexOf(m.letter), 1);
        hidden.delete(m.letter.messageId);
      }
      return moves.map((m) => m.letter.messageId);
    },
    attemptsOfEvent: async (id) =>
      id === 'e1'
        ? [{ outcome: 'failed', attempt: 7, status: 503, error: 'HTTP 503', at: 9, at_ms: 9000 }]
        : [],
    attemptsOfJob: async () => [],
    lastAttemptOfJob: async () => undefined,
    alarmRecorded: async () => true,
    listDeadDue: async (kind, _limit, taskId) =>
      dead.filter((d) => d.kind === kind && (taskId === undefined || d.payload.task_id === taskId)),
    reviveDeadDue: async (d) => {
      revived.push(`${d.kind}#${d.due_at}#${d.ref}`);
      return dead.some((x) => x.kind === d.kind && x.ref === d.ref && x.due_at === d.due_at);
    },
    // Workflow 3 belongs to task 8.
    tasksOfWorkflows: async (ids) => new Map(ids.filter((id) => id === 3).map((id) => [id, 8])),
    now: () => 1000,
  };
  return { deps, queue, hidden, moved, released, revived };
}

describe('listDeadLetters', () => {
  it('lists a task’s dead letters with their last reason and releases everything it read', async () => {
    // Arrange
    const w = world([
      letter('m1', webhookBody('e1')),
      letter('m2', webhookBody('e2', 8)),
      letter('m3', 'junk'),
    ]);
    // Act
    const out = await listDeadLetters({ uid: 1, queue: 'webhook', task_id: 7 }, w.deps);
    // Assert
    expect(out.dead_letters).toEqual([
      {
        message_id: 'm1',
        queue: 'webhook',
        kind: 'webhook',
        task_id: 7,
        event_id: 'e1',
        event: 'ALARM',
        type: 'compress_disable',
        receive_count: 8,
        sent_at: 100,
        attempts: 1,
        first_failure_at: 9,
        last_failure_at: 9,
        reason: { outcome: 'failed', attempt: 7, status: 503, error: 'HTTP 503', at: 9 },
      },
    ]);
    expect(out.more).toBe(false);
    expect(w.hidden.size).toBe(0);
    expect(w.released.sort()).toEqual(['m1', 'm2', 'm3']);
  });

  it('says there is more beyond the limit', async () => {
    const w = world([letter('m1', webhookBody('e1')), letter('m2', webhookBody('e2'))]);
    const out = await listDeadLetters({ uid: 1, queue: 'webhook', limit: 1 }, w.deps);
    expect(out.dead_letters).toHaveLength(1);
    expect(out.more).toBe(true);
  });

  it('refuses anyone but a super administrator', async () => {
    const w = world([letter('m1', webhookBody('e1'))], { admin: false });
    await expect(listDeadLetters({ uid: 2, queue: 'webhook' }, w.deps)).rejects.toThrowError(ForbiddenError);
  });

  it('lists dead due work newest first, filtered by task', async () => {
    const w = world([]);
    const all = await listDeadLetters({ uid: 1, queue: 'due' }, w.deps);
    expect(all.dead_letters.map((d) => d.message_id)).toEqual([
      'workflow-remind#40#3:0:1',
      'compress-flush#50#7:m:1',
    ]);
    const mine = await listDeadLetters({ uid: 1, queue: 'due', task_id: 7 }, w.deps);
    expect(mine.dead_letters).toMatchObject([
      { message_id: 'compress-flush#50#7:m:1', task_id: 7, attempts: 10, reason: { error: 'boom' } },
    ]);
    // Workflow work names its workflow, not its task: the filter reads the workflow's task.
    const eight = await listDeadLetters({ uid: 1, queue: 'due', task_id: 8 }, w.deps);
    expect(eight.dead_letters.map((d) => d.message_id)).toEqual(['workflow-remind#40#3:0:1']);
  });
});

describe('redriveDeadLetters', () => {
  it('moves one message by id and releases the others', async () => {
    // Arrange
    const w = world([letter('m1', webhookBody('e1')), letter('m2', webhookBody('e2'))]);
    // Act
    const out = await redriveDeadLetters({ uid: 1, queue: 'webhook', message_id: 'm2' }, w.deps);
    // Assert
    expect(out).toEqual({ queue: 'webhook', redriven: 1, message_ids: ['m2'], more: false });
    expect(w.queue.map((l) => l.messageId)).toEqual(['m1']);
    expect(w.hidden.size).toBe(0);
  });

  it('moves all of a task’s messages', async () => {
    const w = world([
      letter('m1', webhookBody('e1')),
      letter('m2', webhookBody('e2', 8)),
      letter('m3', webhookBody('e3')),
    ]);
    const out = await redriveDeadLetters({ uid: 1, queue: 'webhook', all: 1, task_id: 7 }, w.deps);
    expect(out.message_ids.sort()).toEqual(['m1', 'm3']);
    expect(w.queue.map((l) => l.messageId)).toEqual(['m2']);
  });

  it.each([
    [{}, ValidationError],
    [{ message_id: 'm1', all: 1 as const }, ValidationError],
    [{ message_id: 'missing' }, NotFoundError],
  ])('refuses %o', async (input, error) => {
    const w = world([letter('m1', webhookBody('e1'))]);
    await expect(redriveDeadLetters({ uid: 1, queue: 'webhook', ...input }, w.deps)).rejects.toThrowError(
      error,
    );
    expect(w.hidden.size).toBe(0);
  });

  it('puts dead due work back as due work', async () => {
    const w = world([]);
    const out = await redriveDeadLetters(
      { uid: 1, queue: 'due', message_id: 'compress-flush#50#7:m:1' },
      w.deps,
    );
    expect(out.redriven).toBe(1);
    expect(w.revived).toEqual(['compress-flush#50#7:m:1']);
    await expect(
      redriveDeadLetters({ uid: 1, queue: 'due', message_id: 'compress-flush#51#7:m:1' }, w.deps),
    ).rejects.toThrowError(NotFoundError);
  });
});
