import { describe, expect, it } from 'vitest';
import { alarmDueHandlers } from '#shared/domain/alarms/due-work.ts';
import { DUE_KINDS } from '#shared/domain/deliveries/dlq.ts';
import { taskDueHandlers } from '#shared/domain/tasks/due-work.ts';
import { workflowDueHandlers } from '#shared/domain/workflows/due-work.ts';
import { dueHandlers } from './due-handlers.ts';

describe('dueHandlers', () => {
  it('is every kind the dead-letter views know (DUE_KINDS)', () => {
    expect([...DUE_KINDS].sort()).toEqual(Object.keys(dueHandlers).sort());
  });

  it('keeps every feature kind: no two features register the same kind', () => {
    const features = [workflowDueHandlers, taskDueHandlers, alarmDueHandlers];
    const kinds = features.flatMap((f) => Object.keys(f));
    expect(new Set(kinds).size).toBe(kinds.length);
    for (const f of features)
      for (const [kind, run] of Object.entries(f)) expect(dueHandlers[kind]).toBe(run);
  });
});
