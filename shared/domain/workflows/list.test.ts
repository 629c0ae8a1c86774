import { describe, expect, it } from 'vitest';
import type { Department, User } from '../directory/model.ts';
import type { Task } from '../tasks/model.ts';
import {
  countTaskIds,
  isWorkflowCursor,
  keyBefore,
  keyRange,
  listWorkflows,
  type WorkflowListDeps,
} from './list.ts';
import {
  type CountMove,
  countDeltas,
  ownershipAfter,
  ownershipOfRecords,
  type PipelineRecord,
  type Workflow,
  type WorkflowStatus,
} from './model.ts';
import * as repo from './repository.ts';
import * as counts from './repository-counts.ts';
import type { WorkflowFilter } from './repository-listing.ts';
import { defaultDeps } from './workflow-deps.ts';
import { ANNOUNCE_KIND, runAnnouncement } from './announce.ts';
import { MalformedDueWork } from '../due/runner.ts';

const sk = (at: number, id: number) => `${String(at).padStart(10, '0')}#${String(id).padStart(12, '0')}`;

describe('ownership', () => {
  it.each<[string, Parameters<typeof ownershipAfter>, ReturnType<typeof ownershipAfter>]>([
    ['claim sets the claimer', ['claim', {}, 2, []], { claimer: 2 }],
    ['claim by the application', ['claim', { assignees: [3] }, 0, []], { claimer: 0, assignees: [3] }],
    [
      'assign replaces the assignees',
      ['assign', { claimer: 2, assignees: [3] }, 1, [4, 5]],
      { claimer: 2, assignees: [4, 5] },
    ],
    [
      'processed keeps both',
      ['processed', { claimer: 2, assignees: [3] }, 1, []],
      { claimer: 2, assignees: [3] },
    ],
    ['close keeps both', ['close', { claimer: 2 }, 1, []], { claimer: 2 }],
    [
      'reactive frees the claim, keeps the assignees',
      ['reactive', { claimer: 2, assignees: [3] }, 1, []],
      { assignees: [3] },
    ],
  ])('%s', (_label, args, expected) => {
    // Act / Assert
    expect(ownershipAfter(...args)).toEqual(expected);
  });

  it('replays pipeline records in the order they happened', () => {
    // Arrange: generated, assign [4], claim by 2, close, reactive, claim by 3 (given out of order).
    const r = (at: number, status: number, created_by: number, assignto: number[] = []) =>
      ({
        status,
        created_by,
        created_at: at,
        sk: `PIPE#${at}`,
        props: assignto.length ? { assignto: assignto.map((uid) => ({ uid })) } : {},
      }) as unknown as PipelineRecord;
    const records = [r(6, 1, 3), r(1, 0, 0), r(3, 1, 2), r(2, 4, 1, [4]), r(5, 5, 1), r(4, 9, 1)];
    // Act / Assert
    expect(ownershipOfRecords(records)).toEqual({ claimer: 3, assignees: [4] });
    expect(ownershipOfRecords(records.filter((x) => x.created_at <= 5))).toEqual({ assignees: [4] });
    expect(ownershipOfRecords([r(1, 0, 0)])).toEqual({});
  });
});

describe('countDeltas', () => {
  const shard = (id: number) => id % 4;
  it('sums moves per counter item and drops what cancels out', () => {
    // Arrange
    const moves: CountMove[] = [
      { task_id: 1, workflow_id: 4, to: 0 },
      { task_id: 1, workflow_id: 8, from: 0, to: 1 },
      { task_id: 1, workflow_id: 5, from: 1, to: 9 },
      { task_id: 2, workflow_id: 6, from: 9, to: 0 },
      { task_id: 2, workflow_id: 10, from: 0, to: 9 },
      { task_id: 3, workflow_id: 1, from: 1, to: 1 },
    ];
    // Act
    const deltas = countDeltas(moves, shard);
    // Assert
    expect(deltas).toEqual([
      { task_id: 1, shard: 0, delta: { processing: 1 } },
      { task_id: 1, shard: 1, delta: { processing: -1, closed: 1 } },
    ]);
  });
});

describe('keys and cursors', () => {
  it('steps to the key just before', () => {
    // Act / Assert
    expect(keyBefore(sk(100, 7))).toBe(sk(100, 6));
    expect(keyBefore(sk(100, 0))).toBe(sk(99, 999_999_999_999));
    expect(keyBefore(sk(0, 0))).toBeUndefined();
  });

  it('bounds the range by from, to and the cursor', () => {
    // Act / Assert
    expect(keyRange(undefined, undefined)).toEqual({ lo: sk(0, 0), hi: sk(9_999_999_999, 999_999_999_999) });
    expect(keyRange(10, 20)).toEqual({ lo: sk(10, 0), hi: sk(20, 999_999_999_999) });
    expect(keyRange(10, 20, { u: sk(15, 3) })).toEqual({ lo: sk(10, 0), hi: sk(15, 3) });
    expect(keyRange(10, 20, { u: sk(30, 3) })).toEqual({ lo: sk(10, 0), hi: sk(20, 999_999_999_999) });
    expect(keyRange(10, 20, { u: sk(5, 3) })).toBeUndefined();
  });

  it.each([
    [{ u: sk(1, 1) }, true],
    [{ u: '1#1' }, false],
    [{ u: 5 }, false],
    [{ p: 0, k: 'a#000000000001' }, false],
    [null, false],
  ])('recognizes %j as a cursor: %s', (value, expected) => {
    // Act / Assert
    expect(isWorkflowCursor(value)).toBe(expected);
  });

  it.each([
    [{ uid: 1, task_id: 5 }, [5]],
    [{ uid: 1, task_ids: '5,7,5' }, [5, 7]],
  ])('reads the task ids of %j', (input, expected) => {
    // Act / Assert
    expect(countTaskIds(input)).toEqual(expected);
  });

  it.each([
    [{ uid: 1 }, 'task_id is required (or task_ids)'],
    [{ uid: 1, task_id: 5, task_ids: '5' }, 'task_ids must not be given with task_id'],
    [
      { uid: 1, task_ids: Array.from({ length: 101 }, (_, i) => i + 1).join(',') },
      'task_ids must name at most 100 tasks',
    ],
  ])('refuses %j', (input, message) => {
    // Act / Assert
    expect(() => countTaskIds(input)).toThrow(expect.objectContaining({ status: 422, message }));
  });
});

describe('listWorkflows (merge of the status ranges)', () => {
  /** Workflow i: created at 1000 + i, status by i, claimer 2 on every third. */
  const STATUS_OF: WorkflowStatus[] = [0, 1, 2, 9];
  const all: Workflow[] = Array.from(
    { length: 40 },
    (_, i) =>
      ({
        id: 100 + i,
        task_id: 7,
        metric: 'm',
        history_id: i,
        status: STATUS_OF[(i * 7) % 4],
        created_at: 1000 + i,
        updated_at: 1000 + i,
        version: 1,
        epoch: 1,
        task_name: 't',
        department_id: 1,
        history: {
          id: i,
          uuid: `u${i}`,
          batch: 1,
          metric: 'm',
          level: 1,
          ctn: {},
          notice_time: 0,
          created_at: 0,
        },
        ...(i % 3 === 0 ? { claimer: 2 } : {}),
      }) as unknown as Workflow,
  );

  function deps(): { deps: WorkflowListDeps; queries: () => number } {
    let queries = 0;
    return {
      queries: () => queries,
      deps: {
        taskForUser: async () => ({ id: 7, name: 't', department_id: 1 }) as Task,
        loadReader: async () => ({ user: {} as User, admin: true }),
        listPermissionsOfUser: async () => [],
        existingTaskIds: async (ids: number[]) => new Set(ids),
        getUsers: async (uids: number[]) => uids.map((uid) => ({ uid, username: `u${uid}` }) as User),
        getDepartment: async (id: number) => ({ id, name: 'd' }) as Department,
        getWorkflowCounts: async () => new Map(),
        queryWorkflowsOfTask: async (input: {
          status: WorkflowStatus;
          from: string;
          upTo: string;
          filter: WorkflowFilter;
          evaluate: number;
          startKey?: Record<string, unknown>;
        }) => {
          queries++;
          const range = all
            .filter((w) => w.status === input.status)
            .map((w) => ({ workflow: w, sk: sk(w.created_at, w.id) }))
            .filter((x) => x.sk >= input.from && x.sk <= input.upTo)
            .sort((a, b) => (a.sk < b.sk ? 1 : -1));
          const start = input.startKey ? range.findIndex((x) => x.sk < String(input.startKey?.gsi2sk)) : 0;
          const read = start < 0 ? [] : range.slice(start, start + input.evaluate);
          const more = start >= 0 && start + input.evaluate < range.length;
          return {
            workflows: read.filter(
              (x) => input.filter.claimer === undefined || x.workflow.claimer === input.filter.claimer,
            ),
            next: more ? { gsi2sk: read[read.length - 1].sk } : undefined,
          };
        },
      },
    };
  }

  async function pages(input: Record<string, unknown>, d = deps().deps) {
    const out: number[][] = [];
    let cursor: string | undefined;
    do {
      const page = await listWorkflows({ uid: 1, task_id: 7, ...input, ...(cursor ? { cursor } : {}) }, d);
      out.push(page.workflows.map((w) => w.id));
      cursor = page.next_cursor || undefined;
    } while (cursor && out.length < 50);
    return out;
  }

  const newestFirst = (ws: Workflow[]) => ws.map((w) => w.id).reverse();

  it('merges the four statuses newest first, each workflow once across pages', async () => {
    // Act
    const bySeven = await pages({ limit: 7 });
    // Assert
    expect(bySeven.flat()).toEqual(newestFirst(all));
    expect(bySeven.map((p) => p.length)).toEqual([7, 7, 7, 7, 7, 5]);
  });

  it('lists one status, a time range and a claimer', async () => {
    // Act
    const closed = await pages({ status: 9, limit: 3 });
    const range = await pages({ from: 1010, to: 1019, limit: 4 });
    const claimed = await pages({ claimer: 2, limit: 2 });
    // Assert
    expect(closed.flat()).toEqual(newestFirst(all.filter((w) => w.status === 9)));
    expect(range.flat()).toEqual(
      newestFirst(all.filter((w) => w.created_at >= 1010 && w.created_at <= 1019)),
    );
    expect(claimed.flat()).toEqual(newestFirst(all.filter((w) => w.claimer === 2)));
  });

  it('stops a filtered listing at its budget of queries with a cursor that loses nothing', async () => {
    // Arrange: a filter matched by nothing but the oldest workflow, read 1 item per query.
    const d = deps();
    const sparse = d.deps;
    const query = sparse.queryWorkflowsOfTask;
    sparse.queryWorkflowsOfTask = (input) => query({ ...input, evaluate: 1 });
    all[0].claimer = 5;
    try {
      // Act
      const first = await listWorkflows({ uid: 1, task_id: 7, claimer: 5 }, sparse);
      const every = await pages({ claimer: 5 }, sparse);
      // Assert
      expect(first.workflows).toEqual([]);
      expect(first.next_cursor).not.toBe('');
      expect(every.flat()).toEqual([100]);
      expect(every.length).toBeGreaterThan(2);
    } finally {
      all[0].claimer = 2;
    }
  });
});

describe('runAnnouncement (count moves, once)', () => {
  function outbox() {
    return {
      kind: ANNOUNCE_KIND,
      ref: '5:2',
      due_at: 100,
      payload: {
        scene: 'claim',
        records: [],
        counts: [{ task_id: 1, workflow_id: 5, from: 0, to: 1 }],
      } as Record<string, unknown>,
    };
  }
  function depsWith(answers: ('applied' | 'done' | 'conflict')[]) {
    const calls: unknown[][] = [];
    const deps = {
      ...defaultDeps,
      repo: { ...repo, getPipelineRecords: async () => [] },
      counts: {
        ...counts,
        applyWorkflowCounts: async (...args: Parameters<typeof counts.applyWorkflowCounts>) => {
          calls.push(args);
          return answers.shift() ?? 'applied';
        },
      },
    };
    return { deps, calls };
  }

  it('applies the moves as deltas per counter item and marks the announcement in hand', async () => {
    // Arrange
    const item = outbox();
    const { deps, calls } = depsWith(['applied']);
    // Act
    await runAnnouncement(item, deps);
    await runAnnouncement(item, deps);
    // Assert: once; a buried copy of this item would carry the mark into a redrive.
    expect(calls).toEqual([
      [item, [{ task_id: 1, shard: counts.countShardOf(5), delta: { processing: 1, pending: -1 } }]],
    ]);
    expect(item.payload.counted).toBe(true);
  });

  it.each([
    ['no list', 'x'],
    ['a list of something else', [{ workflow_id: '5', sk: 'P#1' }]],
  ])('refuses an announcement whose records are %s as malformed, touching nothing', async (_, records) => {
    const item = { ...outbox(), payload: { ...outbox().payload, records } };
    const { deps, calls } = depsWith(['applied']);
    const failed = await runAnnouncement(item, deps).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failed).toBeInstanceOf(MalformedDueWork);
    expect(failed?.message).toBe('announcement: records must be a list of {workflow_id, sk}');
    expect(calls).toEqual([]);
  });

  it('retries a lost race, then leaves the counts (unmarked) to the next run', async () => {
    // Arrange
    const won = outbox();
    const lost = outbox();
    const a = depsWith(['conflict', 'conflict', 'done']);
    const b = depsWith(Array(6).fill('conflict'));
    // Act
    await runAnnouncement(won, a.deps);
    const failed = await runAnnouncement(lost, b.deps).then(
      () => undefined,
      (err: Error) => err,
    );
    // Assert
    expect(a.calls).toHaveLength(3);
    expect(won.payload.counted).toBe(true);
    expect(b.calls).toHaveLength(6);
    expect(failed?.message).toMatch(/busy, left for the next run/);
    expect(lost.payload.counted).toBeUndefined();
  });
});
