import type { Task } from './model.ts';

/** For unit tests: a running task with every module off (override what a test needs). */
export function testTask(overrides: Partial<Task> = {}): Task {
  return {
    id: 42,
    name: 'orders',
    pinyin: 'orders',
    token: 't'.repeat(40),
    secret: 's'.repeat(40),
    status: 1,
    department_id: 1,
    flag_save_db: 1,
    task_tags: [],
    permission: { rw: [1], ro: [] },
    receiver: { channels: { email: [1] } },
    workflow: { enable: false },
    filter: { enable: false },
    upgrade: { enable: false },
    compress: { enable: false },
    recovery: { enable: false },
    template: {},
    created_by: 1,
    created_at: 1_700_000_000,
    updated_at: 1_700_000_000,
    version: 1,
    ...overrides,
  };
}
