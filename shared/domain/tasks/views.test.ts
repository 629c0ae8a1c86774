import { describe, expect, it } from 'vitest';
import type { AlarmGroup, User } from '../directory/model.ts';
import type { Task } from './model.ts';
import type { UpgradeModuleView } from './responses.ts';
import { detailGroupIds, detailUids, taskDetail } from './views.ts';

const user = (uid: number): User => ({
  uid,
  username: `u${uid}`,
  pinyin: '',
  user: `u${uid}`,
  email: `u${uid}@x`,
  department: 'd',
  phone: '138',
  wechatid: '',
  role: 0,
  created_at: 0,
  updated_at: 0,
});
const group = (id: number): AlarmGroup => ({
  id,
  name: `g${id}`,
  remark: '',
  receiver: { channels: { email: [1] } },
  created_at: 0,
  updated_at: 0,
});
const summary = (uid: number) => ({ uid, username: `u${uid}`, email: `u${uid}@x`, department: 'd' });

function task(overrides: Partial<Task> = {}): Task {
  return {
    id: 1,
    name: 't',
    pinyin: 't',
    token: 'tok',
    secret: 'sec',
    department_id: 1,
    flag_save_db: 1,
    task_tags: [],
    permission: { rw: [1], ro: [] },
    receiver: { channels: { email: [1] }, mode: 1 },
    workflow: {
      enable: true,
      reminds: [
        {
          mode: 'once',
          status: 0,
          interval: 5,
          reuse_receiver: 0,
          receiver: { alarmgroup: [7], channels: { sms: [2] } },
        },
        { mode: 'cycle', status: 1, interval: 5, reuse_receiver: 1 },
      ],
    },
    filter: { enable: false },
    upgrade: {
      enable: true,
      strategies: [
        {
          interval: 1,
          count: 1,
          level: 3,
          reuse_receiver: 0,
          receiver: {
            alarmgroup: [8],
            channels: { phone: [3], dinggroup: [{ webhook: 'w' }], webhook: 'http://h/x' },
          },
        },
      ],
    },
    compress: { enable: false },
    recovery: { enable: false },
    template: {},
    status: 1,
    created_by: 1,
    created_at: 0,
    updated_at: 0,
    version: 1,
    ...overrides,
  };
}

const emptyChannels = {
  sms: [],
  email: [],
  phone: [],
  dingworker: [],
  yachworker: [],
  dinggroup: [],
  yachgroup: [],
  webhook: { url: '' },
};

describe('detail view of reminder and upgrade receivers', () => {
  it('names their users and groups in the one batch the view reads', () => {
    expect(detailGroupIds(task()).sort()).toEqual([7, 8]);
    expect(detailUids(task(), [], undefined).sort()).toEqual([1, 2, 3]);
  });

  it('ignores the receivers of disabled modules, which are shown as sent', () => {
    const t = task({
      workflow: { ...task().workflow, enable: false },
      upgrade: { ...task().upgrade, enable: false },
    });
    expect(detailGroupIds(t)).toEqual([]);
    expect(detailUids(t, [], undefined)).toEqual([1]);
    const view = taskDetail(t, { users: new Map(), groups: new Map(), tags: new Map() }, 0);
    expect(view.workflow).toEqual(t.workflow);
    expect(view.upgrade).toEqual(t.upgrade);
  });

  it('shows them in the response form of API guide §5.8 and leaves reused ones without a receiver', () => {
    const dir = {
      users: new Map([1, 2, 3].map((u) => [u, user(u)])),
      groups: new Map([7, 8].map((g) => [g, group(g)])),
      tags: new Map(),
    };
    const view = taskDetail(task(), dir, 0);
    const groupView = (id: number) => ({
      id,
      name: `g${id}`,
      remark: '',
      receiver: { channels: { email: [1] } },
    });
    expect(view.workflow.reminds).toEqual([
      {
        mode: 'once',
        status: 0,
        interval: 5,
        reuse_receiver: 0,
        receiver: {
          alarmgroup: [groupView(7)],
          channels: { ...emptyChannels, sms: [summary(2)] },
          dispatch: [],
          mode: 1,
        },
      },
      { mode: 'cycle', status: 1, interval: 5, reuse_receiver: 1 },
    ]);
    expect((view.upgrade as UpgradeModuleView).strategies?.[0].receiver).toEqual({
      alarmgroup: [groupView(8)],
      channels: {
        ...emptyChannels,
        phone: [summary(3)],
        dinggroup: [{ webhook: 'w', secret: '' }],
        webhook: { url: 'http://h/x' },
      },
      dispatch: [],
      mode: 1,
    });
  });
});
