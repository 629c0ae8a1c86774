import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import type { Department, User } from '../directory/model.ts';
import { ValidationError } from '../errors.ts';
import type { Task } from './model.ts';
import { createTask, type TaskDeps, taskDeps, updateTask, updateTaskFields } from './service.ts';

/**
 * The task use cases refuse a URL the outbound guard blocks wherever a task names one (the checks
 * themselves: channels/outbound-urls.test.ts).
 */
const MESSAGE = /^must not point to a private or reserved address \(.+\)$/;
const LOOPBACK_ROBOT = 'http://127.0.0.1:9/robot/send?access_token=tok0123456789secret';
const MAPPED_WEBHOOK = 'http://[::ffff:7f00:1]/';
const cond = [{ rule: [{ field: 'ctn.host', operator: 'eq', threshold: 'a' }] }];

/** A task body naming `robot` (a blocked robot URL) or `webhook` in one receiver location. */
const LOCATIONS: [string, Record<string, unknown>][] = [
  ['receiver.channels.webhook', { receiver: { channels: { webhook: MAPPED_WEBHOOK } } }],
  ['receiver.channels.webhook', { receiver: { channels: { webhook: { url: MAPPED_WEBHOOK } } } }],
  [
    'receiver.channels.dinggroup.0.webhook',
    { receiver: { channels: { dinggroup: [{ webhook: LOOPBACK_ROBOT, secret: 's' }] } } },
  ],
  [
    'receiver.channels.yachgroup.1.webhook',
    {
      receiver: {
        channels: {
          yachgroup: [
            { webhook: 'tok', secret: 's' },
            { webhook: 'http://10.0.0.1/x', secret: 's' },
          ],
        },
      },
    },
  ],
  [
    'receiver.dispatch.0.receiver.channels.dinggroup.0.webhook',
    {
      receiver: {
        channels: { email: [1] },
        dispatch: [
          { conditions: cond, receiver: { channels: { dinggroup: [{ webhook: LOOPBACK_ROBOT }] } } },
        ],
      },
    },
  ],
  [
    'workflow.reminds.0.receiver.channels.dinggroup.0.webhook',
    {
      workflow: {
        enable: true,
        reminds: [
          {
            mode: 'once',
            status: 1,
            interval: 5,
            reuse_receiver: 0,
            receiver: { channels: { dinggroup: [{ webhook: LOOPBACK_ROBOT }] } },
          },
        ],
      },
    },
  ],
  [
    'upgrade.strategies.0.receiver.channels.yachgroup.0.webhook',
    {
      upgrade: {
        enable: true,
        strategies: [
          {
            interval: 5,
            count: 1,
            level: 2,
            reuse_receiver: 0,
            receiver: { channels: { yachgroup: [{ webhook: 'http://[fd00:ec2::254]/' }] } },
          },
        ],
      },
    },
  ],
  ['receiver.channels.webhook', { receiver: { channels: { webhook: 'http://localhost:9/hook' } } }],
];

/** The task use cases against in-memory deps, with the deployment's guard switched by env. */
function memoryDeps() {
  const tasks = new Map<number, Task>();
  let nextId = 100;
  const user = (uid: number) => ({ uid, username: `u${uid}`, user: `u${uid}`, phone: '138' }) as User;
  const deps: TaskDeps = {
    ...taskDeps,
    now: () => 1_000,
    getTask: async (id) => structuredClone(tasks.get(id)),
    allocateTaskId: async () => nextId++,
    createTaskItems: async (t) => {
      tasks.set(t.id, structuredClone(t));
      return 'ok';
    },
    replaceTaskItems: async (prev, next) => {
      if (tasks.get(prev.id)?.version !== prev.version) return 'stale';
      tasks.set(next.id, structuredClone(next));
      return 'ok';
    },
    getUser: async (uid) => user(uid),
    getUsers: async (uids) => uids.map(user),
    getDepartment: async (id) => ({ id, name: `dept${id}` }) as Department,
    getAlarmGroups: async () => [],
    getTemplate: async () => undefined,
    publishWebhookEvents: async () => undefined,
  };
  return { deps, tasks };
}

const body = (over: Record<string, unknown>) => ({
  created_by: 1,
  name: `t-${Math.random().toString(36).slice(2)}`,
  department_id: 1,
  flag_save_db: 1,
  receiver: { channels: { email: [1] } },
  ...over,
});

async function refusal(p: Promise<unknown>): Promise<ValidationError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ValidationError);
  return err as ValidationError;
}

describe('task use cases with BLOCK_PRIVATE_WEBHOOKS=1', () => {
  const saved = { ...process.env };
  beforeAll(() => {
    Object.assign(process.env, {
      TABLE_NAME: 'unit',
      SEAL_KEY: Buffer.alloc(32, 7).toString('base64'),
      BLOCK_PRIVATE_WEBHOOKS: '1',
    });
    resetConfig();
  });
  afterAll(() => {
    process.env = saved;
    resetConfig();
  });

  it.each(LOCATIONS)('create refuses %s with 422 and stores nothing', async (field, over) => {
    // Arrange
    const { deps, tasks } = memoryDeps();
    // Act
    const err = await refusal(createTask(body(over), deps));
    // Assert
    expect(err.status).toBe(422);
    expect(err.errors).toHaveLength(1);
    expect(err.errors[0].field).toBe(field);
    expect(err.errors[0].message).toMatch(MESSAGE);
    expect(err.message).toBe(`${field} ${err.errors[0].message}`);
    expect(tasks.size).toBe(0);
  });

  it.each(LOCATIONS)('update refuses %s with 422 and keeps the task', async (field, over) => {
    // Arrange
    const { deps, tasks } = memoryDeps();
    await createTask(body({}), deps);
    const before = structuredClone(tasks.get(100) as Task);
    // Act
    const err = await refusal(updateTask(before, body(over), deps));
    // Assert
    expect(err.status).toBe(422);
    expect(err.errors.map((e) => e.field)).toEqual([field]);
    expect(tasks.get(100)).toEqual(before);
  });

  it.each(LOCATIONS)('updatefields refuses %s with 422 and keeps the task', async (field, over) => {
    // Arrange
    const { deps, tasks } = memoryDeps();
    await createTask(body({}), deps);
    const before = structuredClone(tasks.get(100) as Task);
    // Act
    const err = await refusal(updateTaskFields(before, { filter_fields: Object.keys(over), ...over }, deps));
    // Assert
    expect(err.status).toBe(422);
    expect(err.errors.map((e) => e.field)).toEqual([field]);
    expect(tasks.get(100)).toEqual(before);
  });

  it('accepts robot tokens and public or unresolvable URLs', async () => {
    // Arrange
    const { deps, tasks } = memoryDeps();
    const receiver = {
      channels: {
        webhook: 'https://8.8.8.8/hook',
        dinggroup: [
          { webhook: '0123456789abcdef', secret: 's' },
          { webhook: 'https://nowhere.invalid/r', secret: 's' },
        ],
      },
    };
    // Act
    await createTask(body({ receiver }), deps);
    // Assert
    expect(tasks.get(100)?.receiver.channels?.webhook).toBe('https://8.8.8.8/hook');
  });
});

describe('task use cases with the guard off (BLOCK_PRIVATE_WEBHOOKS=0)', () => {
  const saved = { ...process.env };
  beforeAll(() => {
    Object.assign(process.env, {
      TABLE_NAME: 'unit',
      SEAL_KEY: Buffer.alloc(32, 7).toString('base64'),
      BLOCK_PRIVATE_WEBHOOKS: '0',
    });
    resetConfig();
  });
  afterAll(() => {
    process.env = saved;
    resetConfig();
  });

  it('stores private URLs, as a local receiver on this machine needs', async () => {
    // Arrange
    const { deps, tasks } = memoryDeps();
    // Act
    await createTask(body(LOCATIONS[2][1]), deps);
    // Assert
    expect(tasks.get(100)?.receiver.channels?.dinggroup).toEqual([{ webhook: LOOPBACK_ROBOT, secret: 's' }]);
  });
});
