import { describe, expect, it } from 'vitest';
import { ConflictError } from '../errors.ts';
import type { Task } from './model.ts';
import { validationOf } from './test-bodies.ts';
import { pauseTransition, startTransition, stopTransition } from './transitions.ts';

describe('status transitions (API guide §5.9)', () => {
  const task = (status: 0 | 1 | 2, paused_until?: number) => ({ id: 7, status, paused_until }) as Task;
  const now = 1_000_000;

  it.each([
    ['running', task(1), 0],
    ['paused', task(2, now + 60), 0],
  ])('stop from %s', (_l, t, status) => {
    expect(stopTransition(t, now)).toEqual({ status });
  });

  it.each([
    ['stopped', task(0)],
    ['paused', task(2, now + 60)],
  ])('start from %s', (_l, t) => {
    expect(startTransition(t, now)).toEqual({ status: 1 });
  });

  it('refuses stop when stopped and start when running (a passed pause is running)', () => {
    expect(() => stopTransition(task(0), now)).toThrow(new ConflictError('task [7] is already stopped'));
    expect(() => startTransition(task(1), now)).toThrow(new ConflictError('task [7] is already running'));
    expect(() => startTransition(task(2, now - 1), now)).toThrow(ConflictError);
    expect(() => startTransition(task(2, now), now)).toThrow(ConflictError);
  });

  it('pauses for 1..10080 minutes', () => {
    expect(pauseTransition(now, 1)).toEqual({ status: 2, paused_until: now + 60 });
    expect(pauseTransition(now, 10_080)).toEqual({ status: 2, paused_until: now + 604_800 });
    for (const bad of [0, 10_081, 1.5, -3]) {
      expect(validationOf(() => pauseTransition(now, bad)).message).toBe(
        'time must be an integer from 1 to 10080',
      );
    }
  });
});
