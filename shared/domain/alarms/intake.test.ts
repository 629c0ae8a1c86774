import { beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import type { Task } from '../tasks/model.ts';
import { acceptAlarms, type IntakeDeps } from './intake.ts';
import { CAP_RETRY_AFTER_SECONDS, MemoryRateStore, RateLimiter } from './rate-limit.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  process.env.ALARM_RATE_LIMIT = '200';
  resetConfig();
});

const task = (rate_limit?: number) => ({ id: 100001, status: 1, name: 't', rate_limit }) as Task;

function deps() {
  const published: AlarmMessage[][] = [];
  const d: IntakeDeps = {
    getTask: async () => undefined,
    getIntake: async () => undefined,
    publishAlarms: async (messages) => {
      published.push(messages);
    },
    signOfLife: async () => {},
    limiter: new RateLimiter({ store: new MemoryRateStore(), now: () => 0 }),
  };
  return { deps: d, published };
}

const alerts = (n: number) => Array.from({ length: n }, (_, i) => ({ ctn: { i } }));

describe('acceptAlarms: every alert of a request counts against the rate limit', () => {
  it('refuses a request of more alerts than the limit whole (the per-request cap), queueing nothing', async () => {
    // Arrange: a task limited to 5 alarms per second
    const { deps: d, published } = deps();
    // Act
    const err = await acceptAlarms(task(5), alerts(100), 0, d).catch((e) => e);
    // Assert
    expect(err).toMatchObject({
      status: 429,
      code: 4010,
      message:
        "request of 100 alarms exceeds the per-request cap of 5 (the rate limit of task [100001]): lower the monitor's max_alerts to at most 5",
      headers: { 'retry-after': String(CAP_RETRY_AFTER_SECONDS) },
    });
    expect(published).toEqual([]);
  });

  it('takes a request within what is left of the second, refuses one over it with Retry-After', async () => {
    const { deps: d, published } = deps();
    const taken = await acceptAlarms(task(5), alerts(3), 0, d);
    const over = await acceptAlarms(task(5), alerts(3), 0, d).catch((e) => e);
    const rest = await acceptAlarms(task(5), alerts(2), 0, d);
    expect(taken.uuids).toHaveLength(3);
    expect(over).toMatchObject({
      status: 429,
      code: 4010,
      message: 'task [100001] reached its rate limit of 5 alarms per second',
      headers: { 'retry-after': '1' },
    });
    expect(rest.uuids).toHaveLength(2);
    expect(published.map((m) => m.length)).toEqual([3, 2]);
  });

  it('applies the deployment limit as the cap of a task without its own', async () => {
    const { deps: d } = deps();
    await expect(acceptAlarms(task(), alerts(200), 0, d)).resolves.toHaveProperty('uuids');
    await expect(acceptAlarms(task(), alerts(201), 0, d)).rejects.toThrow('per-request cap of 200');
  });
});
