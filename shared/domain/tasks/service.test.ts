import { describe, expect, it } from 'vitest';
import type { AlarmGroup, Department, User } from '../directory/model.ts';
import type { DueItem } from '../due/repository.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import type { Task } from './model.ts';
import type { TaskWriteResult } from './repository-writes.ts';
import { logged } from '../../testing/logs.ts';
import {
  createTask,
  expirePause,
  MAX_UPDATE_ATTEMPTS,
  PAUSE_EXPIRY,
  pauseTask,
  type TaskDeps,
  taskDeps,
  updatedFieldsConfig,
  updateTask,
  updateTaskFields,
} from './service.ts';
import { configFingerprint } from './normalize.ts';

/**
 * The use cases against an in-memory table that honours the same version conditions as the
 * repository, to exercise the retry and ordering logic the local stack cannot force.
 */
function fakeDeps(overrides: Partial<TaskDeps> = {}) {
  const tasks = new Map<number, Task>();
  const calls: string[] = [];
  let nextId = 100;
  const user = (uid: number, phone = '1380000000'): User => ({
    uid,
    username: `u${uid}`,
    pinyin: '',
    user: `u${uid}`,
    email: `u${uid}@x`,
    department: 'd',
    phone,
    wechatid: '',
    role: 0,
    created_at: 0,
    updated_at: 0,
  });
  const deps: TaskDeps = {
    ...taskDeps,
    now: () => 1_000,
    getTask: async (id) => structuredClone(tasks.get(id)),
    allocateTaskId: async () => nextId++,
    createTaskItems: async (t) => {
      tasks.set(t.id, structuredClone(t));
      return 'ok';
    },
    replaceTaskItems: async (prev, next): Promise<TaskWriteResult> => {
      if (tasks.get(prev.id)?.version !== prev.version) return 'stale';
      tasks.set(next.id, structuredClone(next));
      return 'ok';
    },
    updateTaskStatus: async (t, change) => {
      calls.push('updateTaskStatus');
      const cur = tasks.get(t.id);
      if (cur?.version !== t.version) return false;
      tasks.set(t.id, { ...cur, ...change, version: cur.version + 1 } as Task);
      return true;
    },
    resumePausedTask: async (id, pausedUntil) => {
      const cur = tasks.get(id);
      if (cur?.status !== 2 || cur.paused_until !== pausedUntil) return false;
      tasks.set(id, { ...cur, status: 1, paused_until: undefined });
      return true;
    },
    putDue: async () => {
      calls.push('putDue');
    },
    getUser: async (uid) => (uid < 50 ? user(uid) : undefined),
    getUsers: async (uids) => uids.map((u) => user(u, u === 6 ? '' : '138')),
    getDepartment: async (id) => ({ id, name: `dept${id}` }) as Department,
    getAlarmGroups: async (ids) =>
      ids.map((id) => ({ id, receiver: { channels: { sms: [6] } } }) as AlarmGroup),
    getTemplate: async () => undefined,
    publishWebhookEvents: async () => {
      calls.push('ping');
    },
    ...overrides,
  };
  return { deps, tasks, calls };
}

const body = (over: Record<string, unknown> = {}) => ({
  created_by: 1,
  name: 'cpu',
  department_id: 1,
  flag_save_db: 1,
  receiver: { channels: { email: [1] } },
  ...over,
});

/** A partial update (`flag_save_db` 0) as a replay replayed it over `task`: the guard a save with its id gets. */
function replayedEdit(task: Task) {
  const edit = { filter_fields: ['flag_save_db'], flag_save_db: 0 };
  return {
    edit,
    guard: {
      what: 'replay [r1]',
      version: task.version,
      fingerprint: configFingerprint(updatedFieldsConfig(task, edit)),
    },
  };
}

describe('tasks service', () => {
  it('creates a task even when its PING cannot be queued', async () => {
    const { deps, tasks } = fakeDeps({
      publishWebhookEvents: async () => {
        throw new Error('queue down');
      },
    });
    const [out, errors] = await logged('error', () =>
      createTask(body({ receiver: { channels: { webhook: 'https://x.example' } } }), deps),
    );
    expect(errors).toEqual([['PING event not queued', { taskId: 100, error: new Error('queue down') }]]);
    expect(out.task).toMatchObject({ id: 100, status: 1, department: { id: 1, name: 'dept1' } });
    expect(tasks.get(100)?.receiver.channels?.webhook).toBe('https://x.example');
  });

  it('pings only when the webhook URL is new', async () => {
    const { deps, calls, tasks } = fakeDeps();
    await createTask(body(), deps);
    expect(calls).toEqual([]);
    const t = tasks.get(100) as Task;
    await updateTaskFields(
      t,
      {
        filter_fields: ['receiver.channels.webhook'],
        receiver: { channels: { webhook: 'https://a.example' } },
      },
      deps,
    );
    await updateTaskFields(
      tasks.get(100) as Task,
      { filter_fields: ['flag_save_db'], flag_save_db: 0 },
      deps,
    );
    expect(calls).toEqual(['ping']);
  });

  it('reports phone-less users of alarm groups and 404s for unknown references', async () => {
    const { deps } = fakeDeps();
    const out = await createTask(body({ receiver: { alarmgroup: [3] } }), deps);
    expect(out.nullPhoneUsers.map((u) => u.uid)).toEqual([6]);
    await expect(createTask(body({ name: 'b', created_by: 77 }), deps)).rejects.toThrow(
      new NotFoundError('user [77] not found'),
    );
  });

  it('computes the pinyin of a new name only', async () => {
    // Arrange
    const { deps, tasks } = fakeDeps();
    await createTask(body({ name: '磁盘' }), deps);
    const created = tasks.get(100)?.pinyin;

    // Act
    await updateTaskFields(tasks.get(100) as Task, { filter_fields: ['name'], name: '内存 mem' }, deps);
    const renamed = tasks.get(100)?.pinyin;
    tasks.set(100, { ...(tasks.get(100) as Task), pinyin: 'as stored' });
    await updateTaskFields(
      tasks.get(100) as Task,
      { filter_fields: ['flag_save_db'], flag_save_db: 0 },
      deps,
    );

    // Assert
    expect([created, renamed]).toEqual(['cipan', 'neicun mem']);
    expect(tasks.get(100)).toMatchObject({ name: '内存 mem', flag_save_db: 0, pinyin: 'as stored' });
  });

  it('re-applies a partial update to the task another writer changed in between', async () => {
    const { deps, tasks } = fakeDeps();
    await createTask(body({ task_tags: [1] }), deps);
    const stale = tasks.get(100) as Task;
    // Another writer changes the name after we read the task.
    tasks.set(100, { ...stale, name: 'renamed', version: stale.version + 1 });
    await updateTaskFields(stale, { filter_fields: ['task_tags'], task_tags: [2] }, deps);
    expect(tasks.get(100)).toMatchObject({ name: 'renamed', task_tags: [2], version: 3 });
  });

  it('keeps re-applying a partial update that loses races, with backoff, then gives up with 409', async () => {
    let attempts = 0;
    const waits: number[] = [];
    const { deps, tasks } = fakeDeps({
      replaceTaskItems: async () => {
        attempts++;
        return 'stale';
      },
      sleep: async (ms: number) => {
        waits.push(ms);
      },
    });
    await createTask(body(), deps);
    await expect(
      updateTaskFields(tasks.get(100) as Task, { filter_fields: ['flag_save_db'], flag_save_db: 0 }, deps),
    ).rejects.toThrow(new ConflictError('task [100] was changed concurrently, please retry'));
    expect(attempts).toBe(MAX_UPDATE_ATTEMPTS);
    expect(waits).toHaveLength(MAX_UPDATE_ATTEMPTS - 1);
    expect(Math.max(...waits)).toBeLessThanOrEqual(400);
  });

  it('schedules the pause expiry before writing the status, and the expiry resumes only that pause', async () => {
    const { deps, tasks, calls } = fakeDeps();
    await createTask(body(), deps);
    await pauseTask(tasks.get(100) as Task, 3, deps);
    expect(calls).toEqual(['putDue', 'updateTaskStatus']);
    expect(tasks.get(100)).toMatchObject({ status: 2, paused_until: 1_000 + 180 });
    const item = (until: number): DueItem => ({
      kind: PAUSE_EXPIRY,
      ref: '100',
      due_at: until,
      payload: { task_id: 100, paused_until: until },
    });
    await expirePause(item(999), 2_000, deps);
    expect(tasks.get(100)?.status).toBe(2);
    await expirePause(item(1_180), 2_000, deps);
    expect(tasks.get(100)?.status).toBe(1);
  });

  it('moves the configuration version on configuration saves only, not on a status change', async () => {
    const { deps, tasks } = fakeDeps();
    await createTask(body(), deps);
    expect(tasks.get(100)).toMatchObject({ version: 1, config_version: 1, config_saved_at: 1_000 });
    await pauseTask(tasks.get(100) as Task, 3, deps);
    expect(tasks.get(100)).toMatchObject({ version: 2, config_version: 1 });
    await updateTaskFields(
      tasks.get(100) as Task,
      { filter_fields: ['flag_save_db'], flag_save_db: 0 },
      deps,
    );
    expect(tasks.get(100)).toMatchObject({ version: 3, config_version: 3 });
  });

  it('a guarded save writes only the configuration replayed, over the task as it was: 409 and nothing written otherwise', async () => {
    // Arrange: the configuration a replay replayed (a partial update), its fingerprint and version
    const { deps, tasks } = fakeDeps();
    await createTask(body(), deps);
    const task = tasks.get(100) as Task;
    const { guard } = replayedEdit(task);
    // Act / Assert: another configuration: 409, nothing written
    await expect(
      updateTaskFields(task, { filter_fields: ['name'], name: 'other' }, deps, guard),
    ).rejects.toThrow(new ConflictError('the configuration differs from the one replay [r1] replayed'));
    // The same configuration written as a whole (keys in another order) is the same configuration
    const whole = { ...body(), flag_save_db: 0, receiver: { channels: { email: [1] } } };
    const reordered = Object.fromEntries(Object.entries(whole).reverse());
    await pauseTask(tasks.get(100) as Task, 3, deps);
    // The task changed since the replay (a pause): 409, nothing written
    await expect(updateTask(tasks.get(100) as Task, reordered, deps, guard)).rejects.toThrow(
      new ConflictError('task [100] changed since replay [r1] (version 1 then, 2 now): replay again'),
    );
    expect(tasks.get(100)).toMatchObject({ version: 2, flag_save_db: 1 });
    // Replayed again over version 2: the whole configuration saves
    await updateTask(tasks.get(100) as Task, reordered, deps, { ...guard, version: 2 });
    expect(tasks.get(100)).toMatchObject({ version: 3, flag_save_db: 0, config_version: 3 });
  });

  it('a guarded save that loses a race is a 409, not a retry over the changed task', async () => {
    const { deps, tasks } = fakeDeps();
    await createTask(body(), deps);
    const task = tasks.get(100) as Task;
    const { edit, guard } = replayedEdit(task);
    // Another writer moves the task between the read and the write
    deps.replaceTaskItems = async () => {
      tasks.set(100, { ...task, version: 2 });
      return 'stale';
    };
    await expect(updateTaskFields(task, edit, deps, guard)).rejects.toThrow(ConflictError);
    expect(tasks.get(100)).toMatchObject({ version: 2, flag_save_db: 1 });
  });
});
