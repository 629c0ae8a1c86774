import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { call, serviceNow } from '../support/client.ts';
import { FakeClient } from '../support/fakes.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { recentNotificationAttempts } from '../support/notifications.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * API guide §9.7 through the real stack (report endpoint, alarm consumer, notification consumer, the
 * DingTalk robot fake): with non-lazy dispatch every matching dispatch item and the defaults get the
 * alarm, because a robot that takes the message ends failover only within its own receiver set.
 */
const fakes = new FakeClient(inject('fakes').url);

const token = (name: string) => `${name}${randomUUID().replace(/-/g, '')}`;
const robot = (webhook: string) => ({ webhook, secret: `SEC${webhook}` });
const when = (field: string, operator: string, threshold: string) => [
  { rule: [{ field, operator, threshold }] },
];

async function report(task: CreatedTask, ctn: Record<string, unknown>): Promise<{ code: number }> {
  const timestamp = await serviceNow();
  return call('POST', '/alarm/report', {
    app: null,
    json: { taskid: task.id, timestamp, sign: hmacSign(task.token, task.id, timestamp), ctn },
  });
}

/** The robot calls of these tokens (all of them, once the task's robot jobs are all settled). */
async function robotCalls(task: CreatedTask, jobs: number, tokens: string[]): Promise<string[]> {
  await fakes.waitFor(
    `${jobs} delivered robot jobs`,
    async () => {
      const attempts = await recentNotificationAttempts(task.id, 100);
      return attempts.filter((a) => a.channel === 'dinggroup' && a.outcome === 'delivered');
    },
    jobs,
    20_000,
  );
  // Let a duplicate (a second job, a redelivery) land before counting.
  await new Promise((r) => setTimeout(r, 500));
  const calls = (await fakes.requests('dinggroup'))
    .filter((r) => tokens.includes(r.query.access_token) && r.signed === true)
    .map((r) => r.query.access_token);
  // Under the chaos queue a copy of a job may send its message again: each robot counted once.
  return eachOnce(calls, (token) => token);
}

describe('non-lazy dispatch with robots (API guide §9.7)', () => {
  it('robots A (item 0), B (item 1) and C (defaults) each get exactly one message', async () => {
    // Arrange: defaults dinggroup [C]; env eq prod -> [A]; sev gt 3 -> [B]; mode 2
    const [a, b, c] = [token('a'), token('b'), token('c')];
    for (const t of [a, b, c]) await fakes.robot(t, { secret: `SEC${t}` });
    const task = await createTask({
      receiver: {
        mode: 2,
        channels: { dinggroup: [robot(c)] },
        dispatch: [
          { conditions: when('ctn.env', 'eq', 'prod'), receiver: { channels: { dinggroup: [robot(a)] } } },
          { conditions: when('ctn.sev', 'gt', '3'), receiver: { channels: { dinggroup: [robot(b)] } } },
        ],
      },
    });
    // Act
    const res = await report(task, { env: 'prod', sev: 10 });
    // Assert
    expect(res.code).toBe(0);
    expect((await robotCalls(task, 3, [a, b, c])).sort()).toEqual([a, b, c].sort());
    const jobs = new Set(
      (await recentNotificationAttempts(task.id, 100)).map((x) => x.job_id.split(':').at(-1)),
    );
    expect([...jobs].sort()).toEqual(['d0', 'd1', 'default']);
  });

  it('a robot named by an item and by the defaults gets the message once', async () => {
    // Arrange: item 0 -> [S], defaults [S, C] (S goes out with item 0; C keeps the defaults' message)
    const [s, c] = [token('s'), token('c')];
    for (const t of [s, c]) await fakes.robot(t, { secret: `SEC${t}` });
    const task = await createTask({
      receiver: {
        mode: 2,
        channels: { dinggroup: [robot(s), robot(c)] },
        dispatch: [
          { conditions: when('ctn.env', 'eq', 'prod'), receiver: { channels: { dinggroup: [robot(s)] } } },
        ],
      },
    });
    // Act
    const res = await report(task, { env: 'prod' });
    // Assert
    expect(res.code).toBe(0);
    expect((await robotCalls(task, 2, [s, c])).sort()).toEqual([s, c].sort());
  });
});
