import { randomInt, randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { db, SCHEMA_VERSION, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { isSealed } from '../../shared/domain/auth/seal.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { maskRobot } from '../../shared/domain/channels/redact.ts';
import { listRecentAttemptsOfTask } from '../../shared/domain/notifications/repository.ts';
import type { AlarmMessage, NotificationJob } from '../../shared/contracts/messages.ts';
import { enqueue } from '../../shared/messaging/sqs.ts';
import { api, call, serviceNow, taskAuth } from '../support/client.ts';
import { FakeClient, type FakeKind } from '../support/fakes.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';

/**
 * Group robots' access tokens and signing secrets are sealed at rest (task items with their dispatch
 * items, reminders and upgrade strategies; alarm groups; a report's override in its alarm record)
 * and on the queues, shown as given by /alarmtask/show and masked by /alarmtask/view and the trace,
 * and opened only to call a robot. Items and messages written in plain before still work.
 */
const fakes = new FakeClient(inject('fakes').url);
const fakesUrl = inject('fakes').url;

const tok = (name: string) => `${name}${randomUUID().replace(/-/g, '')}`;
const robot = (webhook: string, secret?: string) => ({ webhook, ...(secret ? { secret } : {}) });

async function rawItem(key: { pk: string; sk: string }): Promise<string> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
  expect(out.Item).toBeDefined();
  return JSON.stringify(out.Item);
}

async function report(t: CreatedTask, ctn: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const timestamp = await serviceNow();
  const res = await call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp, sign: hmacSign(t.token, t.id, timestamp), ctn, ...extra },
  });
  expect(res.code).toBe(0);
  return res.data.uuid as string;
}

/** The signed calls each robot got (waits for at least one per token). */
async function robotCalls(kind: FakeKind, tokens: string[]) {
  return fakes.waitFor(
    `${kind} calls to ${tokens.length} robots`,
    async () => {
      const calls = (await fakes.requests(kind)).filter((r) => tokens.includes(r.query.access_token));
      return tokens.every((t) => calls.some((c) => c.query.access_token === t)) ? calls : [];
    },
    tokens.length,
    20_000,
  );
}

const show = async (t: CreatedTask) =>
  (await api.get('/alarmtask/show', { query: await taskAuth(t) })).data.task;
const view = async (t: CreatedTask) => api.get('/alarmtask/view', { query: { uid: 1, task_id: t.id } });

describe('robots sealed at rest and on the queues', () => {
  it('stores every robot of a task and an alarm group sealed, shows them as given and masks them in views', async () => {
    // Arrange
    const [a, b, c, d, e, g] = ['a', 'b', 'c', 'd', 'e', 'g'].map(tok);
    const groupId = randomInt(700_000, 800_000);
    await importDirectory({
      alarm_groups: [
        { id: groupId, name: 'robots', receiver: { channels: { dinggroup: [robot(g, `SEC${g}`)] } } },
      ],
    });
    const urlRobot = `${fakesUrl}/yach/robot/send?access_token=${b}`;
    // Act
    const t = await createTask({
      receiver: {
        alarmgroup: [groupId],
        channels: { dinggroup: [robot(a, `SEC${a}`)], yachgroup: [robot(urlRobot, `SEC${b}`)] },
        dispatch: [
          {
            conditions: [{ rule: [{ field: 'ctn.env', operator: 'eq', threshold: 'prod' }] }],
            receiver: { channels: { dinggroup: [robot(c)] } },
          },
        ],
      },
      workflow: {
        enable: true,
        reminds: [
          {
            mode: 'once',
            status: 0,
            interval: 5,
            reuse_receiver: 0,
            receiver: { channels: { dinggroup: [robot(d, `SEC${d}`)] } },
          },
        ],
      },
      upgrade: {
        enable: true,
        strategies: [
          {
            interval: 5,
            count: 3,
            level: 3,
            reuse_receiver: 0,
            receiver: { channels: { yachgroup: [robot(e)] } },
          },
        ],
      },
    });
    // Assert: the items hold no token or secret in plain.
    const plain = [a, b, c, d, e, g, ...[a, b, d, g].map((x) => `SEC${x}`)];
    const stored = await rawItem(keys.task(t.id));
    const group = await rawItem(keys.alarmGroup(groupId));
    for (const p of plain) {
      expect(stored).not.toContain(p);
      expect(group).not.toContain(p);
    }
    // (8 robot values, the task token and the task secret)
    expect(stored.match(/"v1:/g)?.length).toBe(10);
    expect(group.match(/"v1:/g)?.length).toBe(2);
    // ... /alarmtask/show shows them as given (the group's too).
    const detail = await show(t);
    expect(detail.receiver.channels.dinggroup).toEqual([robot(a, `SEC${a}`)]);
    expect(detail.receiver.channels.yachgroup).toEqual([robot(urlRobot, `SEC${b}`)]);
    expect(detail.receiver.dispatch[0].receiver.channels.dinggroup).toEqual([{ webhook: c, secret: '' }]);
    expect(detail.workflow.reminds[0].receiver.channels.dinggroup).toEqual([robot(d, `SEC${d}`)]);
    expect(detail.upgrade.strategies[0].receiver.channels.yachgroup).toEqual([{ webhook: e, secret: '' }]);
    expect(detail.receiver.alarmgroup[0].receiver.channels.dinggroup).toEqual([robot(g, `SEC${g}`)]);
    // ... /alarmtask/view masks them all.
    const masked = await view(t);
    expect(masked.code).toBe(0);
    for (const p of plain) expect(JSON.stringify(masked.data)).not.toContain(p);
    expect(masked.data.task.receiver.channels.dinggroup).toEqual([
      { webhook: maskRobot(a), secret: '(set)' },
    ]);
    expect(masked.data.task.receiver.alarmgroup[0].receiver.channels.dinggroup[0].webhook).toBe(maskRobot(g));
    expect(JSON.stringify(masked.data)).not.toContain('v1:');
  });

  it('keeps the robots through partial updates and seals a robot an update gives', async () => {
    // Arrange
    const [a, n] = [tok('a'), tok('n')];
    const t = await createTask({ receiver: { channels: { dinggroup: [robot(a, `SEC${a}`)], email: [1] } } });
    // Act: a field that is no robot, then the robots themselves.
    const renamed = await api.put('/alarmtask/updatefields', {
      ...(await taskAuth(t)),
      filter_fields: ['name'],
      name: `${t.name}-2`,
    });
    const afterRename = await show(t);
    const replaced = await api.put('/alarmtask/updatefields', {
      ...(await taskAuth(t)),
      filter_fields: ['receiver.channels.dinggroup'],
      receiver: { channels: { dinggroup: [robot(n, `SEC${n}`), robot(a, `SEC${a}`)] } },
    });
    // Assert
    expect([renamed.code, replaced.code]).toEqual([0, 0]);
    expect(afterRename.receiver.channels.dinggroup).toEqual([robot(a, `SEC${a}`)]);
    expect((await show(t)).receiver.channels.dinggroup).toEqual([robot(n, `SEC${n}`), robot(a, `SEC${a}`)]);
    const stored = await rawItem(keys.task(t.id));
    for (const p of [a, n, `SEC${a}`, `SEC${n}`]) expect(stored).not.toContain(p);
  });

  it('calls sealed robots with their own token and signature, records them masked, keeps an override sealed', async () => {
    // Arrange
    const [a, b, g, o] = ['a', 'b', 'g', 'o'].map(tok);
    for (const x of [a, b, g, o]) await fakes.robot(x, { secret: `SEC${x}` });
    const groupId = randomInt(800_000, 900_000);
    await importDirectory({
      alarm_groups: [
        { id: groupId, name: 'ops', receiver: { channels: { dinggroup: [robot(g, `SEC${g}`)] } } },
      ],
    });
    const t = await createTask({
      receiver: {
        alarmgroup: [groupId],
        channels: {
          dinggroup: [robot(a, `SEC${a}`)],
          yachgroup: [robot(`${fakesUrl}/yach/robot/send?access_token=${b}`, `SEC${b}`)],
        },
      },
    });
    // Act
    await report(t, { host: 'web-1' });
    const overridden = await report(
      t,
      { host: 'web-2' },
      { receiver: { channels: { dinggroup: [robot(o, `SEC${o}`)] } } },
    );
    // Assert: every robot heard, signed with its own secret.
    const ding = await robotCalls('dinggroup', [a, g, o]);
    const yach = await robotCalls('yachgroup', [b]);
    expect([...ding, ...yach].every((r) => r.signed === true)).toBe(true);
    // ... the records name them masked only.
    const attempts = await fakes.waitFor(
      'four delivered robot jobs',
      async () => (await listRecentAttemptsOfTask(t.id, 50)).filter((x) => x.outcome === 'delivered'),
      4,
      20_000,
    );
    const text = JSON.stringify(attempts);
    for (const p of [a, b, g, o]) {
      expect(text).not.toContain(p);
      expect(text).not.toContain(`SEC${p}`);
    }
    expect(attempts.map((x) => x.target)).toContain(maskRobot(o));
    // ... the stored alarm keeps its override sealed, and its trace shows it masked.
    const record = await getAlarmRecord(t.id, overridden);
    const kept = record?.receiver?.channels?.dinggroup?.[0];
    expect(isSealed(kept?.webhook ?? '')).toBe(true);
    expect(isSealed(kept?.secret ?? '')).toBe(true);
    const trace = await api.get('/alarmtask/alarm/trace', {
      query: { uid: 1, task_id: t.id, uuid: overridden },
    });
    expect(trace.data.receivers.robots).toEqual([
      { set: 'override', channel: 'dinggroup', robots: [maskRobot(o)] },
    ]);
    expect(trace.data.receivers.override.dinggroup).toEqual([{ webhook: maskRobot(o), secret: '(set)' }]);
  });

  it('reads a task, an alarm group and queued messages written in plain before robots were sealed', async () => {
    // Arrange: a task and an alarm group stored as they were before (robots in plain) ...
    const [l, h, n, m] = ['l', 'h', 'n', 'm'].map(tok);
    for (const x of [l, h, n, m]) await fakes.robot(x, { secret: `SEC${x}` });
    const groupId = randomInt(900_000, 1_000_000);
    const now = await serviceNow();
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.alarmGroup(groupId),
          entity: 'alarm_group',
          schema_version: SCHEMA_VERSION,
          id: groupId,
          name: 'old',
          remark: '',
          receiver: { channels: { dinggroup: [robot(h, `SEC${h}`)] } },
          created_at: now,
          updated_at: now,
        },
      }),
    );
    const t = await createTask({ receiver: { channels: { email: [1] } } });
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(t.id),
        UpdateExpression: 'SET receiver = :r',
        ExpressionAttributeValues: {
          ':r': { alarmgroup: [groupId], channels: { dinggroup: [robot(l, `SEC${l}`)] } },
        },
      }),
    );
    // ... and a notification job and an alarm with an override queued before.
    const job: NotificationJob = {
      kind: 'notify',
      job_id: `${randomUUID()}:not_compress:dinggroup:default`,
      task_id: t.id,
      scene: 'not_compress',
      channel: 'dinggroup',
      robots: [robot(n, `SEC${n}`)],
      context: { task: { id: t.id, name: t.name }, history: { level: 1, ctn: { old: 'job' } } },
    };
    const alarm: AlarmMessage = {
      kind: 'alarm',
      uuid: randomUUID(),
      task_id: t.id,
      level: 1,
      ctn: { old: 'alarm' },
      notice_time: now,
      reported_at: now,
      receiver: { channels: { dinggroup: [robot(m, `SEC${m}`)] } },
    };
    // Act
    const detail = await show(t);
    const masked = await view(t);
    await enqueue('notify', { body: job });
    await enqueue('alarm', { body: alarm });
    await report(t, { host: 'old-config' });
    // Assert: shown as given and masked, as before.
    expect(detail.receiver.channels.dinggroup).toEqual([robot(l, `SEC${l}`)]);
    expect(detail.receiver.alarmgroup[0].receiver.channels.dinggroup).toEqual([robot(h, `SEC${h}`)]);
    for (const p of [l, h, `SEC${l}`, `SEC${h}`]) expect(JSON.stringify(masked.data)).not.toContain(p);
    // ... every robot called, signed.
    const calls = await robotCalls('dinggroup', [l, h, n, m]);
    expect(calls.every((r) => r.signed === true)).toBe(true);
    // ... the old alarm's override is stored sealed.
    const record = await getAlarmRecord(t.id, alarm.uuid);
    expect(isSealed(record?.receiver?.channels?.dinggroup?.[0].webhook ?? '')).toBe(true);
    // ... and the task is sealed once it is saved again.
    const saved = await api.put('/alarmtask/updatefields', {
      ...(await taskAuth(t)),
      filter_fields: ['name'],
      name: `${t.name}-saved`,
    });
    expect(saved.code).toBe(0);
    const stored = await rawItem(keys.task(t.id));
    expect(stored).not.toContain(l);
    expect(stored).not.toContain(`SEC${l}`);
    expect((await show(t)).receiver.channels.dinggroup).toEqual([robot(l, `SEC${l}`)]);
  });
});
