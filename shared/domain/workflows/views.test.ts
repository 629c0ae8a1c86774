import { describe, expect, it } from 'vitest';
import type { User } from '../directory/model.ts';
import type { Task } from '../tasks/model.ts';
import type { PipelineRecord, Workflow } from './model.ts';
import { reminderItems } from './announce.ts';
import { orderedPipelines, personOf, workflowEventData, workflowView } from './views.ts';

const user: User = {
  uid: 7,
  username: 'Ann',
  pinyin: 'ann',
  user: 'ann',
  email: 'ann@example.com',
  department: 'Infra',
  phone: '',
  wechatid: '',
  role: 0,
  created_at: 1,
  updated_at: 1,
};
const users = new Map([[7, user]]);

const workflow: Workflow = {
  id: 3,
  task_id: 12,
  metric: 'm',
  history_id: 44,
  status: 1,
  created_at: 100,
  updated_at: 200,
  version: 2,
  epoch: 2,
  task_name: 'old name',
  department_id: 1,
  history: {
    id: 44,
    uuid: 'u-1',
    task_id: 12,
    batch: 9,
    metric: 'm',
    level: 2,
    ctn: { host: 'a', n: 1 },
    notice_time: 90,
    created_at: 95,
  },
};

const record = (over: Partial<PipelineRecord>): PipelineRecord => ({
  workflow_id: 3,
  sk: 'PIPE#0000000100#000001',
  status: 0,
  remark: '',
  props: {},
  created_by: 0,
  created_at: 100,
  workflow_status: 0,
  workflow_epoch: 1,
  ...over,
});

describe('workflow views', () => {
  it('orders pipeline records by time, then by key', () => {
    const a = record({ sk: 'PIPE#0000000100#000001', created_at: 100 });
    const b = record({ sk: 'PIPE#0000000100#000002', created_at: 100 });
    const c = record({ sk: 'PIPE#0000000050#R000', created_at: 150 });
    expect(orderedPipelines([c, b, a])).toEqual([a, b, c]);
  });

  it('renders the creator as null for user 0 and as a person otherwise', () => {
    expect(personOf(0, users)).toBeNull();
    expect(personOf(7, users)).toEqual({
      uid: 7,
      username: 'Ann',
      user: 'ann',
      email: 'ann@example.com',
      department: 'Infra',
    });
    expect(personOf(8, users)).toEqual({ uid: 8, username: '', user: '', email: '', department: '' });
  });

  it('shows API guide §10.4 with ctn as JSON text', () => {
    const view = workflowView({
      workflow,
      pipelines: [
        record({}),
        record({ sk: 'PIPE#0000000200#000002', status: 1, created_by: 7, created_at: 200 }),
      ],
      users,
      task: { id: 12, name: 'now', department_id: 1 },
      department: { id: 1, name: 'Infra' },
    });
    expect(view).toEqual({
      id: 3,
      task_id: 12,
      metric: 'm',
      history_id: 44,
      status: 1,
      created_at: 100,
      updated_at: 200,
      pipelines: [
        { status: 0, remark: '', props: {}, created_by: 0, created_at: 100, creator: null },
        { status: 1, remark: '', props: {}, created_by: 7, created_at: 200, creator: personOf(7, users) },
      ],
      task: { id: 12, name: 'now', department_id: 1, department: { id: 1, name: 'Infra' } },
      history: {
        id: 44,
        uuid: 'u-1',
        batch: 9,
        metric: 'm',
        notice_time: 90,
        level: 2,
        ctn: '{"host":"a","n":1}',
        created_at: 95,
      },
    });
  });

  it('adds the pipeline to operation events only, with assignto for assign', () => {
    const base = { task: { id: 12, name: 't' }, workflow, status: 1 as const, users };
    const generated = workflowEventData({ ...base, scene: 'generated', pipeline: record({}) });
    const assign = workflowEventData({
      ...base,
      scene: 'assign',
      pipeline: record({ created_by: 7, remark: 'go', props: { assignto: [personOf(7, users)!] } }),
    });
    expect(generated).not.toHaveProperty('pipeline');
    expect(generated.workflow).toEqual({ id: 3, status: 1, created_at: 100 });
    expect(generated.history).toMatchObject({ id: 44, level: 2, leve: 2, ctn: { host: 'a', n: 1 } });
    expect(assign.pipeline).toEqual({
      remark: 'go',
      user: { uid: 7, username: 'Ann', user: 'ann' },
      assignto: [{ uid: 7, username: 'Ann', user: 'ann' }],
    });
  });

  it('schedules the reminders of the status a workflow entered, keyed by epoch', () => {
    const task = {
      workflow: {
        enable: true,
        reminds: [
          { mode: 'once', status: 0, interval: 5, reuse_receiver: 1 },
          { mode: 'cycle', status: 1, interval: 10, reuse_receiver: 1 },
        ],
      },
    } as unknown as Task;
    const pending = reminderItems(task, record({ workflow_status: 0, workflow_epoch: 1, created_at: 100 }));
    const processing = reminderItems(
      task,
      record({ workflow_status: 1, workflow_epoch: 2, created_at: 160 }),
    );
    const disabled = reminderItems(
      { workflow: { ...task.workflow, enable: false } } as Task,
      record({ workflow_status: 0 }),
    );
    expect(pending).toEqual([
      {
        kind: 'workflow-remind',
        ref: '3:0:1',
        due_at: 400,
        payload: { workflow_id: 3, index: 0, epoch: 1 },
      },
    ]);
    expect(processing.map((d) => [d.ref, d.due_at])).toEqual([['3:1:2', 760]]);
    expect(disabled).toEqual([]);
  });
});
