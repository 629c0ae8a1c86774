import { describe, expect, it } from 'vitest';
import type { Task } from '../tasks/model.ts';
import {
  MAX_BATCH_IDS,
  OPERATIONS,
  type Operation,
  refusal,
  remindDecision,
  remindersFor,
  remindScene,
  repeated,
  transition,
  type WorkflowStatus,
} from './model.ts';

const STATUSES: WorkflowStatus[] = [0, 1, 2, 9];

/** API guide §10.2, row by row: the allowed source states, the new status and the pipeline status. */
const TABLE: Record<Operation, { from: WorkflowStatus[]; to?: WorkflowStatus; pipeline: number }> = {
  claim: { from: [0], to: 1, pipeline: 1 },
  assign: { from: [0, 1], pipeline: 4 },
  processed: { from: [1], to: 2, pipeline: 2 },
  reactive: { from: [9], to: 0, pipeline: 5 },
  close: { from: [0, 1], to: 9, pipeline: 9 },
};

const REFUSALS: Record<Operation, string> = {
  claim: 'only pending workflows can be claimed',
  assign: 'only pending or processing workflows can be assigned',
  processed: 'only processing workflows can be processed',
  reactive: 'only closed workflows can be reactivated',
  close: 'only pending or processing workflows can be closed',
};
const NAMES: Record<WorkflowStatus, string> = { 0: 'pending', 1: 'processing', 2: 'done', 9: 'closed' };

describe('workflow state table (API guide §10.2)', () => {
  const cases = OPERATIONS.flatMap((op) => STATUSES.map((status) => ({ op, status })));

  it.each(cases)('$op from status $status', ({ op, status }) => {
    // Arrange
    const row = TABLE[op];
    const wf = { id: 5, status };
    // Act
    const t = transition(op, wf);
    const why = refusal(op, wf);
    // Assert
    if (row.from.includes(status)) {
      const to = row.to ?? status;
      expect(t).toEqual({ status: to, pipeline: row.pipeline, statusChanged: to !== status });
      expect(why).toBeUndefined();
    } else {
      expect(t).toBeUndefined();
      expect(why).toBe(`workflow [5] is ${NAMES[status]}, ${REFUSALS[op]}`);
    }
  });

  it('names the example of API guide §2.1 exactly', () => {
    expect(refusal('claim', { id: 5, status: 9 })).toBe(
      'workflow [5] is closed, only pending workflows can be claimed',
    );
  });

  it('keeps a batch within the 100-item transaction limit (2 items per workflow + 1 outbox item)', () => {
    expect(MAX_BATCH_IDS * 2 + 1).toBeLessThanOrEqual(100);
  });
});

describe('repeated', () => {
  it.each([
    { values: [1, 2, 3], out: [] },
    { values: [1, 2, 1], out: [1] },
    { values: [3, 3, 3, 4, 4], out: [3, 4] },
    { values: [], out: [] },
  ])('$values -> $out', ({ values, out }) => {
    expect(repeated(values)).toEqual(out);
  });
});

describe('reminders', () => {
  const reminds = [
    { mode: 'once' as const, status: 0 as const, interval: 5, reuse_receiver: 1 as const },
    { mode: 'cycle' as const, status: 1 as const, interval: 10, reuse_receiver: 1 as const },
    { mode: 'cycle' as const, status: 0 as const, interval: 2, reuse_receiver: 1 as const },
  ];
  const task = (over: Partial<Task> = {}) =>
    ({ status: 1, workflow: { enable: true, reminds }, ...over }) as Pick<
      Task,
      'status' | 'paused_until' | 'workflow'
    >;

  it('selects the reminders of one status with their index', () => {
    expect(remindersFor(reminds, 0).map((r) => r.index)).toEqual([0, 2]);
    expect(remindersFor(reminds, 1).map((r) => r.index)).toEqual([1]);
    expect(remindersFor(reminds, 2)).toEqual([]);
    expect(remindersFor(undefined, 0)).toEqual([]);
  });

  it('names the scenes by status', () => {
    expect(remindScene(0)).toBe('remind_pending');
    expect(remindScene(1)).toBe('remind_processing');
  });

  const now = 1_000_000;
  it.each([
    {
      name: 'fires when the workflow still has the status and epoch',
      wf: { status: 0, epoch: 3 },
      t: task(),
      want: 'fire',
    },
    { name: 'drops on another epoch (cancelled)', wf: { status: 0, epoch: 4 }, t: task(), want: 'drop' },
    { name: 'drops when the workflow is gone', wf: undefined, t: task(), want: 'drop' },
    { name: 'drops when the task is gone', wf: { status: 0, epoch: 3 }, t: undefined, want: 'drop' },
    {
      name: 'drops when the workflow switch was turned off',
      wf: { status: 0, epoch: 3 },
      t: task({ workflow: { enable: false, reminds } }),
      want: 'drop',
    },
    {
      name: 'drops when the reminder was removed',
      wf: { status: 0, epoch: 3 },
      t: task({ workflow: { enable: true, reminds: [] } }),
      want: 'drop',
    },
    {
      name: 'drops when the reminder is now for another status',
      wf: { status: 1, epoch: 3 },
      t: task(),
      want: 'drop',
    },
    { name: 'holds while stopped', wf: { status: 0, epoch: 3 }, t: task({ status: 0 }), want: 'hold' },
    {
      name: 'holds while paused',
      wf: { status: 0, epoch: 3 },
      t: task({ status: 2, paused_until: now + 600 }),
      want: 'hold',
    },
    {
      name: 'fires when the pause has passed',
      wf: { status: 0, epoch: 3 },
      t: task({ status: 2, paused_until: now - 1 }),
      want: 'fire',
    },
  ])('$name', ({ wf, t, want }) => {
    const d = remindDecision({
      workflow: wf as { status: WorkflowStatus; epoch: number } | undefined,
      task: t,
      index: 0,
      epoch: 3,
      now,
    });
    expect(d.action).toBe(want);
  });

  it('holds a paused task until the pause ends, a stopped one for a minute', () => {
    const paused = remindDecision({
      workflow: { status: 0, epoch: 1 },
      task: task({ status: 2, paused_until: now + 600 }),
      index: 0,
      epoch: 1,
      now,
    });
    const stopped = remindDecision({
      workflow: { status: 0, epoch: 1 },
      task: task({ status: 0 }),
      index: 0,
      epoch: 1,
      now,
    });
    expect(paused).toEqual({ action: 'hold', until: now + 600 });
    expect(stopped).toEqual({ action: 'hold', until: now + 60 });
  });
});
