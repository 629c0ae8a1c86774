import { beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { selectedReceivers } from '../alarms/notify.ts';
import type { AlarmGroup } from '../directory/model.ts';
import { channelJobs, recipientsOf } from '../notifications/receivers.ts';
import type { JobRecord } from '../notifications/repository.ts';
import type { Task } from '../tasks/model.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';
import {
  type AlarmDeliveries,
  candidateIds,
  deliveriesOfAlarm,
  type JobDeliveries,
  LOG_WINDOW_MS,
  summarizeDeliveries,
  type TraceDeps,
} from './trace.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
  resetConfig();
});

const robot = (n: number) => ({ webhook: `tok-${n}`, secret: 's' });
const task = {
  id: 7,
  name: 't',
  receiver: {
    mode: 2,
    alarmgroup: [1],
    channels: { email: [1], dinggroup: [robot(1)], webhook: 'https://h.example.com' },
    dispatch: [
      { conditions: [], receiver: { channels: { yachgroup: [robot(2)] } } },
      { conditions: [], receiver: { alarmgroup: [2], channels: { sms: [2] } } },
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
        receiver: { channels: { dinggroup: [robot(3)] } },
      },
    ],
  },
} as unknown as Task;
const groups = [
  { id: 1, name: 'g1', remark: '', receiver: { channels: { dinggroup: [robot(4)], phone: [1] } } },
  { id: 2, name: 'g2', remark: '', receiver: { channels: { yachgroup: [robot(5)] } } },
] as AlarmGroup[];

const record = (over: Partial<AlarmRecord> = {}) =>
  ({
    uuid: 'u',
    task_id: 7,
    outcome: 'compressed',
    notify: 'now',
    selection: { override: false, dispatch: [0, 1], defaults: true },
    upgrades: [{ index: 0, key: '0.5.3', zcount: 3 }],
    processed_at: 1000,
    ...over,
  }) as unknown as AlarmRecord;

/** The job ids the pipeline makes for a notice (alarms/effects.ts + notifications/receivers.ts). */
function jobIdsOf(prefix: string, receivers: Parameters<typeof recipientsOf>[0]): string[] {
  const context = { task: { id: 7, name: 't' } };
  return channelJobs(recipientsOf(receivers, groups), {
    job_id: prefix,
    task_id: 7,
    scene: 'compressed',
    context,
  }).map((j) => j.job_id);
}

describe('candidateIds', () => {
  it('holds every job id the pipeline makes for an alarm and its upgrade', () => {
    // Arrange
    const r = record();
    const made = [
      ...jobIdsOf('7:u:compressed', selectedReceivers(task.receiver, r.selection)),
      ...jobIdsOf('7:u:upgrade:0.5.3', [task.upgrade.strategies?.[0].receiver as never]),
    ];
    // Act
    const { jobIds, eventIds } = candidateIds(7, 'u', r, task);
    // Assert
    expect(made.length).toBeGreaterThan(6);
    for (const id of made) expect(jobIds).toContain(id);
    expect(eventIds).toEqual(['7:u:ALARM', '7:u:UPGRADE:0.5.3']);
  });

  it('holds the override set of a report with its own receiver', () => {
    const override = { channels: { dinggroup: [robot(9)], email: [3] } };
    const r = record({
      receiver: override,
      selection: { override: true, dispatch: [], defaults: false },
      upgrades: [],
    });
    const made = jobIdsOf('7:u:not_compress', selectedReceivers(task.receiver, r.selection, override));
    const { jobIds } = candidateIds(7, 'u', { ...r, outcome: 'compress_disable' } as AlarmRecord, task);
    for (const id of made) expect(jobIds).toContain(id);
  });

  it('without a record (a task that stores nothing) tries the alarm and the recovery notices', () => {
    const { eventIds, jobIds } = candidateIds(7, 'u', undefined, task);
    expect(eventIds).toEqual(['7:u:ALARM', '7:u:RECOVERY']);
    expect(jobIds).toContain('7:u:not_compress:email');
    expect(jobIds).toContain('7:u:recovery:dinggroup:default');
  });

  it("a compressed alarm of a task with delay recovery: also its metric's recovery notices", () => {
    const delayed = {
      ...task,
      flag_save_db: 1,
      compress: { enable: true, method: 4 },
      recovery: { enable: true, mode: 2, delay_interval: 10 },
    } as unknown as typeof task;
    const { eventIds, jobIds } = candidateIds(
      7,
      'u',
      record({ outcome: 'compressed', upgrades: [] }),
      delayed,
    );
    expect(eventIds).toEqual(['7:u:ALARM', '7:u:RECOVERY']);
    expect(jobIds).toContain('7:u:recovery:email');
    expect(candidateIds(7, 'u', record({ outcome: 'compressed', upgrades: [] }), task).eventIds).toEqual([
      '7:u:ALARM',
    ]);
  });

  it('a recovery is the RECOVERY event and the recovery scene', () => {
    const { eventIds, jobIds } = candidateIds(7, 'u', record({ outcome: 'recovery', upgrades: [] }), task);
    expect(eventIds).toEqual(['7:u:RECOVERY']);
    expect(jobIds.every((id) => id.startsWith('7:u:recovery:'))).toBe(true);
  });
});

describe('deliveriesOfAlarm', () => {
  const attempt = (event_id: string, n: number, outcome: WebhookAttempt['outcome']): WebhookAttempt => ({
    event_id,
    task_id: 7,
    attempt: n,
    outcome,
    event: 'ALARM',
    type: 'compressed',
    duration_ms: 1,
    at_ms: n,
    at: 0,
  });

  it('returns the events and jobs found with their attempts, the targets and the stored message', async () => {
    // Arrange
    const windows: { fromMs: number; toMs: number }[] = [];
    const job: JobRecord = {
      job_id: '7:u:compressed:email',
      task_id: 7,
      status: 'delivered',
      done: ['uid:1'],
      runs: 1,
      updated_at: 1,
      channel: 'email',
      scene: 'compressed',
      message: { format: 3, title: 'T', text: '<h3>T</h3>' },
      attempts: [
        { target: 'uid 1 a***@x.com', outcome: 'delivered' },
        { target: 'uid 1 a***@x.com', outcome: 'delivered' },
      ] as never,
    };
    const deps: TraceDeps = {
      getAlarmRecord: async () => record({ upgrades: [] }),
      getTask: async () => task,
      attemptsOfEvents: async (ids, log) => {
        windows.push(log as { fromMs: number; toMs: number });
        return new Map(
          ids.map((id) => [
            id,
            id.endsWith(':ALARM') ? [attempt(id, 1, 'failed'), attempt(id, 2, 'delivered')] : [],
          ]),
        );
      },
      jobs: async (ids) => (ids.includes(job.job_id) ? [job] : []),
    };
    // Act
    const out = await deliveriesOfAlarm(7, 'u', 1000, {}, deps);
    // Assert
    expect(out.webhooks).toEqual([
      {
        event_id: '7:u:ALARM',
        event: 'ALARM',
        type: 'compressed',
        attempts: [attempt('7:u:ALARM', 1, 'failed'), attempt('7:u:ALARM', 2, 'delivered')],
      },
    ]);
    expect(out.notifications).toEqual([
      {
        job_id: '7:u:compressed:email',
        scene: 'compressed',
        channel: 'email',
        status: 'delivered',
        targets: ['uid 1 a***@x.com'],
        message: { format: 3, title: 'T', text: '<h3>T</h3>' },
        attempts: job.attempts,
      },
    ]);
    expect(windows).toEqual([{ taskId: 7, fromMs: 940_000, toMs: 1_000_000 + LOG_WINDOW_MS }]);
  });

  it('searches the log until after a delayed window ends', async () => {
    const windows: { toMs: number }[] = [];
    const deferred = { ...record({ upgrades: [] }), notify: 'deferred', window: { start: 1000, end: 1600 } };
    const deps: TraceDeps = {
      getAlarmRecord: async () => deferred as unknown as AlarmRecord,
      getTask: async () => task,
      attemptsOfEvents: async (ids, log) => {
        windows.push(log as { toMs: number });
        return new Map(ids.map((id) => [id, []]));
      },
      jobs: async () => [],
    };
    await deliveriesOfAlarm(7, 'u', 1000, {}, deps);
    expect(windows[0].toMs).toBe(1_600_000 + LOG_WINDOW_MS);
  });
});

describe('summarizeDeliveries', () => {
  type Try = [target: string, outcome: string, at_ms: number, code?: string, detail?: string];
  const job = (channel: string, status: JobDeliveries['status'], attempts: Try[]) =>
    ({
      job_id: `7:u:compressed:${channel}`,
      scene: 'compressed',
      channel,
      status,
      targets: [],
      attempts: attempts.map(([target, outcome, at_ms, code = '', detail], seq) => ({
        target,
        outcome,
        at_ms,
        seq,
        code,
        ...(detail ? { detail } : {}),
      })),
    }) as unknown as JobDeliveries;
  const event = (outcomes: string[], answer: { status?: number; error?: string } = {}) => ({
    event_id: '7:u:ALARM',
    event: 'ALARM',
    type: 'compressed',
    attempts: outcomes.map((outcome, i) => ({ attempt: i + 1, outcome, at_ms: i, ...answer })),
  });
  const of = (notifications: JobDeliveries[], webhooks: ReturnType<typeof event>[] = []) =>
    summarizeDeliveries({ notifications, webhooks } as unknown as AlarmDeliveries);
  const skippedMail: Try = ['a', 'skipped', 1, 'not_configured', 'not configured'];

  it.each([
    [
      'every target delivered',
      [job('email', 'delivered', [['a', 'delivered', 1, '250']])],
      [event(['failed', 'delivered'], { status: 200 })],
      'delivered',
      'notified',
      'email delivered, webhook delivered',
    ],
    [
      'every delivery failed',
      [job('sms', 'pending', [['a', 'failed', 1, 'Throttling', 'rate exceeded']])],
      [event(['failed', 'failed'], { status: 503 })],
      'failed',
      'nobody reached',
      'sms failed (rate exceeded), webhook failed (HTTP 503)',
    ],
    [
      'every delivery skipped',
      [job('email', 'skipped', [skippedMail, ['b', 'skipped', 1, 'no_email', 'user [2] has none']])],
      [],
      'skipped',
      'nobody reached',
      'email 2 skipped (not configured; no e-mail address)',
    ],
    [
      'refused and rejected are failures',
      [job('dinggroup', 'rejected', [['r', 'rejected', 1, '310000', 'keywords not in content']])],
      [event(['refused'], { error: 'the URL is refused by the outbound guard' })],
      'failed',
      'nobody reached',
      'dinggroup failed (keywords not in content), webhook failed (the URL is refused by the outbound guard)',
    ],
    [
      'failed and skipped, none delivered',
      [job('email', 'skipped', [skippedMail])],
      [event(['failed'], { error: 'timeout after 200 ms' })],
      'failed',
      'nobody reached',
      'email skipped (not configured), webhook failed (timeout after 200 ms)',
    ],
    [
      'the webhook delivered, the e-mail skipped: a system got it, no person did',
      [job('email', 'skipped', [skippedMail])],
      [event(['delivered'], { status: 200 })],
      'partly delivered',
      'nobody reached',
      'email skipped (not configured), webhook delivered',
    ],
    [
      'only a webhook, delivered',
      [],
      [event(['delivered'], { status: 200 })],
      'delivered',
      'nobody reached',
      'webhook delivered',
    ],
    [
      'a throttled robot waits its turn',
      [job('dinggroup', 'pending', [['r', 'throttled', 1, 'throttled']])],
      [],
      'pending',
      'not notified yet',
      'dinggroup pending',
    ],
    ['a job not run yet', [job('email', 'pending', [])], [], 'pending', 'not notified yet', 'email pending'],
    ['nothing recorded', [], [], 'none', 'nobody reached', 'no delivery recorded'],
  ])('%s', (_, jobs, events, result, reach, text) => {
    const s = of(jobs as JobDeliveries[], events);
    expect([s.result, s.reach, s.text]).toEqual([result, reach, text]);
  });

  it('cuts a long reason and keeps at most two per outcome', () => {
    const long = 'x'.repeat(100);
    const s = of([
      job('email', 'rejected', [
        ['a', 'failed', 1, 'E1', long],
        ['b', 'failed', 1, 'E2', 'second'],
        ['c', 'failed', 1, 'E3', 'third'],
      ]),
    ]);
    expect(s.channels[0].reasons).toEqual({ failed: [`${'x'.repeat(59)}…`, 'second'] });
  });

  it("counts each target once, by its latest attempt, per channel across the alarm's jobs", () => {
    // Arrange: a retried e-mail (a failed then delivered, b failed), and a robot job of the upgrade
    const mail = job('email', 'pending', [
      ['a', 'failed', 1, '451'],
      ['b', 'failed', 1, '451'],
      ['a', 'delivered', 2, '250'],
      ['b', 'failed', 2, '550', 'mailbox unavailable'],
    ]);
    const upgrade = { ...job('email', 'skipped', [['c', 'skipped', 3, 'no_email']]), scene: 'upgrade:0.5.3' };
    // Act
    const s = of([mail, upgrade], [event(['skipped'], { error: 'task has no webhook' })]);
    // Assert
    expect(s).toEqual({
      result: 'partly delivered',
      reach: 'notified',
      text: 'email 1 delivered, 1 failed (mailbox unavailable), 1 skipped (no e-mail address), webhook skipped (task has no webhook)',
      channels: [
        {
          channel: 'email',
          result: 'partly delivered',
          delivered: 1,
          failed: 1,
          skipped: 1,
          pending: 0,
          reasons: { failed: ['mailbox unavailable'], skipped: ['no e-mail address'] },
        },
        {
          channel: 'webhook',
          result: 'skipped',
          delivered: 0,
          failed: 0,
          skipped: 1,
          pending: 0,
          reasons: { skipped: ['task has no webhook'] },
        },
      ],
    });
  });
});
