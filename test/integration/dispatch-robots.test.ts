import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { call, serviceNow } from '../support/client.ts';
import { FakeClient } from '../support/fakes.ts';
import { createTask } from '../support/tasks.ts';

/**
 * Behavior 7.6 through the real stack: with non-lazy dispatch, every matching dispatch item and the
 * defaults get the alarm, and a robot that takes the message ends failover only within its own
 * receiver set: robots A (item 1), B (item 2) and C (defaults) each get exactly one message.
 */
const fakes = new FakeClient(inject('fakes').url);

describe('non-lazy dispatch with robots (behavior 7.6)', () => {
  it('sends the alarm to the robot of each matching item and of the defaults', async () => {
    // Arrange
    const tok = (name: string) => `${name}${randomUUID().replace(/-/g, '')}`;
    const [a, b, c] = [tok('a'), tok('b'), tok('c')];
    for (const t of [a, b, c]) await fakes.robot(t);
    const cond = (field: string, operator: string, threshold: string) => [
      { rule: [{ field, operator, threshold }] },
    ];
    const task = await createTask({
      receiver: {
        mode: 2,
        channels: { dinggroup: [{ webhook: c, secret: 'SECc' }] },
        dispatch: [
          {
            conditions: cond('ctn.env', 'eq', 'prod'),
            receiver: { channels: { dinggroup: [{ webhook: a }] } },
          },
          { conditions: cond('ctn.sev', 'gt', '3'), receiver: { channels: { dinggroup: [{ webhook: b }] } } },
        ],
      },
    });
    // Act
    const timestamp = await serviceNow();
    const res = await call('POST', '/alarm/report', {
      app: null,
      json: {
        taskid: task.id,
        timestamp,
        sign: hmacSign(task.token, task.id, timestamp),
        ctn: { env: 'prod', sev: 10 },
      },
    });
    // Assert
    expect(res.code).toBe(0);
    const hits = await fakes.waitFor(
      'three robot calls',
      async () => (await fakes.requests('dinggroup')).filter((r) => [a, b, c].includes(r.query.access_token)),
      3,
      20_000,
    );
    await new Promise((r) => setTimeout(r, 1000));
    const all = (await fakes.requests('dinggroup')).filter((r) => [a, b, c].includes(r.query.access_token));
    expect(hits.length).toBeGreaterThanOrEqual(3);
    expect(all.map((r) => r.query.access_token).sort()).toEqual([a, b, c].sort());
  });
});
