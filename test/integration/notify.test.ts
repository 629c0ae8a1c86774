import { createHmac, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { resetConfig } from '../../shared/config/env.ts';
import type { NotificationJob } from '../../shared/contracts/messages.ts';
import { publish } from '../../shared/messaging/sqs.ts';
import { deliverNotification, deliverNotificationBatch } from '../../shared/domain/notifications/delivery.ts';
import { findJobs } from '../../shared/domain/notifications/jobs.ts';
import {
  type AttemptRecord,
  blockRobot,
  type JobRecord,
  leaseRobotSlots,
} from '../../shared/domain/notifications/repository.ts';
import { robotId } from '../../shared/domain/notifications/throttle.ts';
import { serviceNow } from '../support/client.ts';
import { syncClock } from '../support/workflows.ts';
import { FakeClient, type FakeRequest } from '../support/fakes.ts';
import { createTask } from '../support/tasks.ts';
import { recentNotificationAttempts } from '../support/notifications.ts';
import { logged } from '../../shared/testing/logs.ts';
import { eachOnce, UNDER_CHAOS } from '../support/chaos.ts';

/**
 * The notification consumer against the real local stack and the provider fakes: jobs are put on the
 * notify queue as the pipeline and workflows do, and the fakes show what reached each provider.
 */
const fakes = new FakeClient(inject('fakes').url);

let seq = 0;
/** A job as the pipeline builds it; `context` entries given override the default alarm context. */
function job(
  overrides: Partial<NotificationJob> & Pick<NotificationJob, 'task_id' | 'channel'>,
): NotificationJob {
  const { context, ...rest } = overrides;
  return {
    kind: 'notify',
    job_id: `test-${randomUUID()}:${overrides.scene ?? 'not_compress'}:${overrides.channel}`,
    scene: 'not_compress',
    ...rest,
    context: {
      task: { id: overrides.task_id, name: 'unnamed' },
      history: {
        id: ++seq,
        uuid: randomUUID(),
        batch: 0,
        metric: '',
        level: 2,
        leve: 2,
        ctn: { hostname: 'web-1', msg: '<b>disk & full</b>' },
        notice_time: 1582650647,
      },
      ...context,
    },
  };
}

async function send(...jobs: NotificationJob[]) {
  await publish(
    'notify',
    jobs.map((body) => ({ body })),
  );
}

const FINAL = ['delivered', 'rejected', 'skipped'];

/** A job's record, wherever its runs are (its item, its task's notification log). */
async function recordOf(j: NotificationJob): Promise<JobRecord | undefined> {
  const now = (await serviceNow()) * 1000;
  return (await findJobs(j.task_id, [j.job_id], { fromMs: now - 3 * 86_400_000, toMs: now + 60_000 }))[0];
}

async function settled(j: NotificationJob, timeoutMs = 20_000): Promise<JobRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await recordOf(j);
    if (s && FINAL.includes(s.status)) return s;
    if (Date.now() > deadline) throw new Error(`job ${j.job_id} not settled: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Every attempt of a job, oldest first. */
const attemptsOf = async (j: NotificationJob) => (await recordOf(j))?.attempts ?? [];

/** A job's attempts, each once under the chaos queue. */
const attemptsOnce = async (j: NotificationJob) =>
  eachOnce(await attemptsOf(j), (a) => [a.attempt, a.outcome, a.code, a.target]);

const robotCalls = (kind: 'dinggroup' | 'yachgroup', token: string) => async () =>
  (await fakes.requests(kind)).filter((r) => r.query.access_token === token || r.path.includes(token));

const token = () => `tok${randomUUID().replace(/-/g, '')}`;
const secret = () => `SEC${randomUUID().replace(/-/g, '')}`;

let task: { id: number; name: string };

beforeAll(async () => {
  task = await createTask({ receiver: { channels: { email: [1] } } });
});

describe('group robots', () => {
  it('signs the request as DingTalk computes it and sends the default markdown', async () => {
    // Arrange
    const t = token();
    const s = secret();
    await fakes.robot(t, { secret: s });
    const j = job({
      task_id: task.id,
      channel: 'dinggroup',
      robots: [{ webhook: t, secret: s }],
      context: { task },
    });

    // Act
    await send(j);
    const state = await settled(j);

    // Assert
    expect(state.status).toBe('delivered');
    const [call] = await fakes.waitFor('robot call', robotCalls('dinggroup', t));
    expect(call.signed).toBe(true);
    const expected = createHmac('sha256', s).update(`${call.query.timestamp}\n${s}`).digest('base64');
    expect(call.query.sign).toBe(expected);
    expect(call.json.msgtype).toBe('markdown');
    expect(call.json.markdown.title).toBe(`[local] ${task.name}: alarm (error)`);
    expect(call.json.markdown.text).toContain(
      '- **Content**: {"hostname":"web-1","msg":"<b>disk & full</b>"}',
    );
    const attempts = await attemptsOnce(j);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ outcome: 'delivered', code: '0', channel: 'dinggroup', attempt: 1 });
    expect(attempts[0].target).not.toContain(t);
    expect(attempts[0].target).toBe(`${t.slice(0, 4)}***${t.slice(-4)}`);
  });

  it('is refused with errcode 310000 by a robot whose signature does not match, and fails over', async () => {
    const a = token();
    const b = token();
    await fakes.robot(a, { secret: 'the-real-secret' });
    await fakes.robot(b);
    const j = job({
      task_id: task.id,
      channel: 'dinggroup',
      robots: [{ webhook: a, secret: 'a-wrong-secret' }, { webhook: b }],
      context: { task },
    });

    await send(j);
    const state = await settled(j);

    expect(state.status).toBe('delivered');
    const [callA] = await fakes.waitFor('robot a', robotCalls('dinggroup', a));
    expect(callA.signed).toBe(false);
    expect(callA.reply.body).toMatchObject({ errcode: 310000 });
    const attempts = await attemptsOnce(j);
    expect(attempts.map((x) => [x.outcome, x.code])).toEqual([
      ['rejected', '310000'],
      ['delivered', '0'],
    ]);
    // The unsigned robot b got no signature parameters.
    const [callB] = await robotCalls('dinggroup', b)();
    expect(callB.query.sign).toBeUndefined();
  });

  it('fails over to the second robot when the first answers 5xx, without retrying the job', async () => {
    const a = token();
    const b = token();
    await fakes.robot(a, { replies: [{ status: 502, body: 'bad gateway' }] });
    await fakes.robot(b);
    const j = job({
      task_id: task.id,
      channel: 'yachgroup',
      robots: [{ webhook: a }, { webhook: b }],
      context: { task },
    });

    await send(j);
    const state = await settled(j);

    expect(state.status).toBe('delivered');
    const attempts = (await attemptsOf(j)).map((x) => [x.outcome, x.code]);
    if (UNDER_CHAOS) {
      // A copy run beside it finds a answering (its 502 is scripted once): delivered either way.
      expect(attempts).toContainEqual(['failed', 'http_502']);
      expect(attempts.every(([outcome]) => outcome === 'delivered' || outcome === 'failed')).toBe(true);
    } else {
      expect(state.runs).toBe(1);
      expect(await robotCalls('yachgroup', a)()).toHaveLength(1);
      expect(await robotCalls('yachgroup', b)()).toHaveLength(1);
      expect(attempts).toEqual([
        ['failed', 'http_502'],
        ['delivered', '0'],
      ]);
    }
  });

  it('uses a full robot URL as given (access token masked in the record)', async () => {
    const t = token();
    await fakes.robot(t);
    const webhook = `${fakes.url}/ding/robot/send?access_token=${t}`;
    const j = job({ task_id: task.id, channel: 'dinggroup', robots: [{ webhook }], context: { task } });

    await send(j);
    expect((await settled(j)).status).toBe('delivered');

    expect(eachOnce(await robotCalls('dinggroup', t)(), (r) => r.json)).toHaveLength(1);
    const [attempt] = await attemptsOf(j);
    expect(attempt.target).toBe(
      `${fakes.url}/ding/robot/send?access_token=${t.slice(0, 4)}***${t.slice(-4)}`,
    );
  });

  it('retries a robot that answers 5xx (backoff) until it delivers', async () => {
    const t = token();
    await fakes.robot(t, {
      replies: [{ status: 503 }, { status: 500, body: { errcode: -1, errmsg: 'busy' } }],
    });
    const j = job({ task_id: task.id, channel: 'dinggroup', robots: [{ webhook: t }], context: { task } });

    await send(j);
    const state = await settled(j, 30_000);

    expect(state.status).toBe('delivered');
    const attempts = await attemptsOf(j);
    const made = attempts.map((x) => [x.attempt, x.outcome, x.code]);
    if (UNDER_CHAOS) {
      // A copy of a message may run beside it (using up a scripted reply): the failures, then the delivery.
      expect(made.slice(0, -1).map(([, outcome]) => outcome)).toEqual(['failed', 'failed']);
      expect(made.at(-1)?.slice(1)).toEqual(['delivered', '0']);
    } else {
      expect(state.runs).toBe(3);
      expect(made).toEqual([
        [1, 'failed', 'http_503'],
        [2, 'failed', 'http_500'],
        [3, 'delivered', '0'],
      ]);
    }
    expect(await robotCalls('dinggroup', t)()).toHaveLength(attempts.length);
  });

  it('treats errcode != 0 on HTTP 200 as a refusal and records the job as rejected', async () => {
    const t = token();
    // (Scripted for a copy of the message too: under the chaos queue one may run beside it.)
    const refusal = { body: { errcode: 300001, errmsg: 'token is not exist' } };
    await fakes.robot(t, { replies: [refusal, refusal] });
    const j = job({ task_id: task.id, channel: 'dinggroup', robots: [{ webhook: t }], context: { task } });

    await send(j);
    const state = await settled(j);

    expect(state.status).toBe('rejected');
    const attempts = await attemptsOf(j);
    expect(attempts.map((x) => [x.outcome, x.code, x.detail])).toEqual(
      (UNDER_CHAOS ? attempts : [0]).map(() => ['rejected', '300001', 'token is not exist']),
    );
  });

  it('backs a rate-limited robot off: the next robot takes over and the robot is left alone until unblocked', async () => {
    // Arrange: robot a answers DingTalk's "send too fast" code once.
    const a = token();
    const b = token();
    await fakes.robot(a, {
      replies: [{ body: { errcode: 130101, errmsg: 'send too fast, exceed 20 times per minute' } }],
    });
    await fakes.robot(b);
    const first = job({
      task_id: task.id,
      channel: 'dinggroup',
      robots: [{ webhook: a }, { webhook: b }],
      context: { task },
    });

    // Act 1: a is rate limited, b delivers.
    await send(first);
    expect((await settled(first)).status).toBe('delivered');
    const firstAttempts = (await attemptsOf(first)).map((x) => [x.outcome, x.code]);
    if (UNDER_CHAOS) {
      // A copy of the job run at the same moment may have reached a before the block and been
      // answered (a's "too fast" is scripted once): whichever run is on record delivered.
      expect(firstAttempts).toContainEqual(['delivered', '0']);
    } else {
      expect(firstAttempts).toEqual([
        ['rate_limited', '130101'],
        ['delivered', '0'],
      ]);
    }
    const callsToA = (await robotCalls('dinggroup', a)()).length;
    if (!UNDER_CHAOS) expect(callsToA).toBe(1);

    // Act 2: a job for a alone is not sent to it while it is blocked.
    const second = job({
      task_id: task.id,
      channel: 'dinggroup',
      robots: [{ webhook: a }],
      context: { task },
    });
    await send(second);
    const deadline = Date.now() + 15_000;
    let attempts: AttemptRecord[] = [];
    while (attempts.length < 2 && Date.now() < deadline) {
      attempts = await attemptsOf(second);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(attempts.slice(0, 2).map((x) => x.outcome)).toEqual(['throttled', 'throttled']);
    expect(await robotCalls('dinggroup', a)()).toHaveLength(callsToA);

    // Act 3: the block ends (as when its time has passed): the retry delivers.
    await blockRobot(robotId('dinggroup', { webhook: a }), 0, 0);
    const state = await settled(second, 20_000);

    // Assert
    expect(state.status).toBe('delivered');
    const all = await attemptsOf(second);
    if (UNDER_CHAOS) {
      // Copies of either job may reach a once it is unblocked: a is called again, and what the
      // second job's runs record is throttled until one delivered.
      expect((await robotCalls('dinggroup', a)()).length).toBeGreaterThan(callsToA);
      expect(all.map((x) => x.outcome)).toContain('delivered');
      expect(all.every((x) => x.outcome === 'throttled' || x.outcome === 'delivered')).toBe(true);
    } else {
      expect(await robotCalls('dinggroup', a)()).toHaveLength(2);
      expect(all.at(-1)?.outcome).toBe('delivered');
      expect(all.slice(0, -1).every((x) => x.outcome === 'throttled')).toBe(true);
    }
  });
});

describe('robot send budget (table counter)', () => {
  it('leases at most the limit per minute across concurrent senders, again in the next minute, none while blocked', async () => {
    const id = `test-${randomUUID()}`;
    const now = 1_700_000_000;
    const minute = Math.floor(now / 60);

    const results = await Promise.all(
      Array.from({ length: 30 }, () => leaseRobotSlots(id, minute, 1, 20, now)),
    );
    expect(results.filter(Boolean)).toHaveLength(20);
    expect(await leaseRobotSlots(id, minute, 1, 20, now + 1)).toBe(0);
    expect(await leaseRobotSlots(id, minute + 1, 1, 20, now + 60)).toBe(1);

    await blockRobot(id, now + 200, now + 60);
    expect(await leaseRobotSlots(id, minute + 2, 1, 20, now + 120)).toBe(0);
    expect(await leaseRobotSlots(id, minute + 4, 1, 20, now + 240)).toBe(1);
  });

  it('a lease of several slots gets what is left of the minute, and nothing once it is spent', async () => {
    const id = `test-${randomUUID()}`;
    const now = 1_700_000_000;
    const minute = Math.floor(now / 60);
    expect(await leaseRobotSlots(id, minute, 8, 20, now)).toBe(8);
    expect(await leaseRobotSlots(id, minute, 8, 20, now)).toBe(8);
    expect(await leaseRobotSlots(id, minute, 8, 20, now)).toBe(4);
    expect(await leaseRobotSlots(id, minute, 8, 20, now)).toBe(0);
    expect(await leaseRobotSlots(id, minute + 1, 8, 20, now + 60)).toBe(8);
  });
});

describe('templates', () => {
  it('renders a task custom (udf) template per scene, other scenes keep the default', async () => {
    const custom = await createTask({
      template: {
        template_id: 0,
        udf: {
          compressed: {
            dinggroup: { format: 1, template: 'UDF {task.name} on {history.ctn.hostname} {history.level}' },
          },
        },
      },
    });
    const t = token();
    await fakes.robot(t);
    const robots = [{ webhook: t }];
    const compressed = job({
      task_id: custom.id,
      channel: 'dinggroup',
      scene: 'compressed',
      robots,
      context: { task: custom },
    });
    const plain = job({
      task_id: custom.id,
      channel: 'dinggroup',
      scene: 'not_compress',
      robots,
      context: { task: custom },
    });

    await send(compressed, plain);
    await settled(compressed);
    await settled(plain);

    const calls = await robotCalls('dinggroup', t)();
    const text = calls.find((c) => c.json.msgtype === 'text');
    const markdown = calls.find((c) => c.json.msgtype === 'markdown');
    expect(text?.json.text.content).toBe(`UDF ${custom.name} on web-1 error`);
    expect(markdown?.json.markdown.title).toBe(`[local] ${custom.name}: alarm (error)`);
  });

  it('sends a predefined template (template_id) by e-mail as text', async () => {
    const pre = await createTask({ template: { template_id: 1 }, receiver: { channels: { email: [2] } } });
    const j = job({
      task_id: pre.id,
      channel: 'email',
      scene: 'compressed',
      users: [2],
      context: { task: pre },
    });

    await send(j);
    expect((await settled(j)).status).toBe('delivered');

    const [mail] = await fakes.waitFor('mail', async () =>
      (await fakes.mails()).filter((m) => m.text.startsWith(`${pre.name}:`)),
    );
    expect(mail.to).toEqual(['zhangsan@example.com']);
    expect(mail.text).toBe(`${pre.name}: {"hostname":"web-1","msg":"<b>disk & full</b>"}`);
    expect(mail.html).toBe('');
  });
});

describe('e-mail, sms, phone', () => {
  it('e-mails every user with the subject from the template title and an escaped HTML body', async () => {
    const j = job({ task_id: task.id, channel: 'email', users: [1, 3], context: { task } });

    await send(j);
    expect((await settled(j)).status).toBe('delivered');

    const mails = await fakes.waitFor(
      'mails',
      async () => (await fakes.mails()).filter((m) => m.subject === `[local] ${task.name}: alarm (error)`),
      2,
    );
    // Each user (at least once: a job's message may be delivered twice)
    expect([...new Set(mails.flatMap((m) => m.to))].sort()).toEqual([
      'annlee@example.com',
      'lvbu@example.com',
    ]);
    const mail = mails[0];
    expect(mail.from).toBe('tocsin@example.com');
    expect(mail.html).toContain('<table>');
    expect(mail.html).toContain('&lt;b&gt;disk &amp; full&lt;/b&gt;');
    expect(mail.text).toContain('<b>disk & full</b>');
    const attempts = await attemptsOf(j);
    expect(attempts.map((a) => a.target).sort()).toEqual([
      'uid 1 an***@example.com',
      'uid 3 lv***@example.com',
    ]);
  });

  it('retries an e-mail the SMTP server defers (451) and does not resend to those already served', async () => {
    const j = job({
      task_id: task.id,
      channel: 'email',
      users: [1, 2],
      context: { task: { ...task, name: `${task.name}-smtp` } },
    });
    await fakes.script('smtp', [{ smtpCode: 451, match: `${task.name}-smtp` }]);

    await send(j);
    const state = await settled(j, 30_000);

    expect(state.status).toBe('delivered');
    const attempts = await attemptsOf(j);
    // (The 451 is scripted once: under the chaos queue a copy run beside the job may be the one deferred.)
    expect(attempts.filter((a) => a.outcome === 'failed').map((a) => a.code)).toEqual(['smtp_451']);
    const delivered = attempts.filter((a) => a.outcome === 'delivered');
    expect(eachOnce(delivered, (a) => a.target)).toHaveLength(2);
    const mails = (await fakes.mails()).filter((m) => m.subject.includes(`${task.name}-smtp`));
    expect(
      eachOnce(
        mails.flatMap((m) => m.to),
        (to) => to,
      ).sort(),
    ).toEqual(['annlee@example.com', 'zhangsan@example.com']);
  });

  it('texts users through SNS in E.164 (+86), cut to 300 characters, and skips users without a phone', async () => {
    const long = 'x'.repeat(500);
    const j = job({ task_id: task.id, channel: 'sms', users: [1, 3], context: { task } });
    j.context.history = { ...j.context.history, ctn: { long } };

    await send(j);
    expect((await settled(j)).status).toBe('delivered');

    const calls = await fakes.waitFor('sns', async () =>
      (await fakes.requests('sns')).filter((r: FakeRequest) =>
        String(r.json.Message ?? '').includes(task.name),
      ),
    );
    expect(eachOnce(calls, (r) => r.json)).toHaveLength(1);
    expect(calls[0].json.Action).toBe('Publish');
    expect(calls[0].json.PhoneNumber).toBe('+8613800000000');
    expect([...calls[0].json.Message].length).toBe(300);
    const attempts = await attemptsOf(j);
    const byOutcome = Object.fromEntries(attempts.map((a) => [a.outcome, a]));
    expect(byOutcome.delivered.target).toBe('uid 1 138****0000');
    expect(byOutcome.skipped).toMatchObject({ code: 'no_phone', target: 'uid 3' });
  });

  it('records a channel without a provider (phone in the test stack) as skipped: not configured', async () => {
    const j = job({ task_id: task.id, channel: 'phone', users: [1, 2], context: { task } });

    await send(j);
    const state = await settled(j);

    expect(state.status).toBe('skipped');
    const attempts = await attemptsOnce(j);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({
      outcome: 'skipped',
      code: 'not_configured',
      detail: 'not configured',
      target: 'uids 1,2',
    });
  });
});

describe('work notifications', () => {
  it('sends a DingTalk work notice to the users accounts with a cached access token', async () => {
    const tokensBefore = (await fakes.requests('gettoken')).filter(
      (r) => r.path === '/dingapi/gettoken',
    ).length;
    const j1 = job({ task_id: task.id, channel: 'dingworker', users: [1, 2, 3], context: { task } });
    const j2 = job({ task_id: task.id, channel: 'dingworker', users: [4], context: { task } });

    await send(j1);
    expect((await settled(j1)).status).toBe('delivered');
    await send(j2);
    expect((await settled(j2)).status).toBe('delivered');

    const calls = (await fakes.requests('dingworker')).filter((r) =>
      JSON.stringify(r.json).includes(task.name),
    );
    expect(
      eachOnce(calls, (c) => c.json)
        .map((c) => c.json.userid_list)
        .sort(),
    ).toEqual(['annlee,zhangsan,lvbu', 'bobstone']);
    expect(calls[0].json.agent_id).toBe(1001);
    expect(calls[0].json.msg.msgtype).toBe('markdown');
    const tokensAfter = (await fakes.requests('gettoken')).filter(
      (r) => r.path === '/dingapi/gettoken',
    ).length;
    expect(tokensAfter - tokensBefore).toBeLessThanOrEqual(1);
  });

  it('sends a WeChat Work message to wechat ids and skips users without one', async () => {
    const j = job({ task_id: task.id, channel: 'wechat', users: [1, 2, 3], context: { task } });

    await send(j);
    expect((await settled(j)).status).toBe('delivered');

    const [call] = (await fakes.requests('wechat')).filter((r) => JSON.stringify(r.json).includes(task.name));
    expect(call.json).toMatchObject({ touser: 'zs', agentid: 2002, msgtype: 'text' });
    expect(call.json.text.content).toContain(task.name);
    const attempts = await attemptsOf(j);
    expect(attempts.map((a) => [a.outcome, a.code, a.target])).toEqual(
      expect.arrayContaining([
        ['skipped', 'no_account', 'uid 1'],
        ['skipped', 'no_account', 'uid 3'],
        ['delivered', '0', 'uids 2'],
      ]),
    );
  });

  it('sends a Yach work notice (form body, message JSON, job id for de-duplication)', async () => {
    const j = job({ task_id: task.id, channel: 'yachworker', users: [2], context: { task } });

    await send(j);
    expect((await settled(j)).status).toBe('delivered');

    const [call] = (await fakes.requests('yachworker')).filter((r) => r.json.message_id === j.job_id);
    expect(call.json.to_work_code).toBe('zhangsan');
    const message = JSON.parse(call.json.message);
    expect(message.msgtype).toBe('markdown');
    expect(message.markdown.text).toContain(task.name);
  });
});

describe('idempotency and records', () => {
  beforeAll(async () => {
    // This worker runs the consumer's domain function itself: give it the stack's provider settings,
    // and the stack's clock (other suites move it ahead; the task's log and leases are on it).
    Object.assign(process.env, inject('fakes').env);
    resetConfig();
    await syncClock();
  });

  /**
   * A job's first run as the consumer makes it (a batch of one) in this worker: no queue message, so
   * no copy of it (under the chaos queue) can run later and send again.
   */
  async function firstRun(j: NotificationJob) {
    const body = JSON.stringify(j);
    const res = await deliverNotificationBatch([
      { messageId: randomUUID(), receiptHandle: 'h', body, receiveCount: 1 },
    ]);
    expect(res.batchItemFailures).toEqual([]);
    await settled(j);
  }

  it('does not send a delivered job again when its message comes back', async () => {
    const t = token();
    await fakes.robot(t);
    const j = job({ task_id: task.id, channel: 'dinggroup', robots: [{ webhook: t }], context: { task } });
    await firstRun(j);

    const again = await deliverNotification(JSON.stringify(j), 2);

    expect(again).toBe('done');
    expect(await robotCalls('dinggroup', t)()).toHaveLength(1);
    expect(await attemptsOf(j)).toHaveLength(1);
  });

  it('does not send a job again that a producer replays once its first run is in the task log', async () => {
    // Arrange: a job sent and recorded (its first run settled it: the task's notification log)
    const [t, other] = [token(), token()];
    await fakes.robot(t);
    await fakes.robot(other);
    const j = job({ task_id: task.id, channel: 'dinggroup', robots: [{ webhook: t }], context: { task } });
    await firstRun(j);
    expect(await robotCalls('dinggroup', t)()).toHaveLength(1);
    const since = (await serviceNow()) * 1000 - 60_000;
    // Act: the producer runs again (a redelivered alarm) and publishes it as a replay, beside a new job
    const next = job({
      task_id: task.id,
      channel: 'dinggroup',
      robots: [{ webhook: other }],
      context: { task },
    });
    await send({ ...j, replay: true, replay_since_ms: since }, next);
    await settled(next);
    // Assert: the consumer found the first run in the log and sent nothing
    expect(await robotCalls('dinggroup', t)()).toHaveLength(1);
    expect(await attemptsOf(j)).toHaveLength(1);
  });

  it('leaves a malformed message for the dead-letter queue without throwing, and says so', async () => {
    const job = JSON.stringify({ kind: 'notify', job_id: 'x', task_id: 1 });
    const [results, errors] = await logged('error', async () => [
      await deliverNotification('not json', 1),
      await deliverNotification(job, 1),
    ]);
    expect(results).toEqual(['malformed', 'malformed']);
    // The length only: a malformed message may hold anything, secrets included
    const message = 'malformed notification job; left for the dead-letter queue';
    expect(errors).toEqual([
      [message, { length: 8 }],
      [message, { length: job.length }],
    ]);
  });

  it('lists a task recent attempts newest first', async () => {
    const other = await createTask();
    const t = token();
    await fakes.robot(t);
    const jobs = [1, 2, 3].map(() =>
      job({ task_id: other.id, channel: 'dinggroup', robots: [{ webhook: t }], context: { task: other } }),
    );
    for (const j of jobs) {
      await send(j);
      await settled(j);
    }

    const recent = await recentNotificationAttempts(other.id, 10);

    if (UNDER_CHAOS) {
      // A copy of a job the queue delivered twice, run later, is an attempt of its own (and the newer).
      expect(new Set(recent.map((a) => a.job_id))).toEqual(new Set(jobs.map((j) => j.job_id)));
      const at = recent.map((a) => a.at);
      expect(at).toEqual([...at].sort((x, y) => y - x));
    } else {
      expect(recent.map((a) => a.job_id)).toEqual(jobs.map((j) => j.job_id).reverse());
    }
    expect(recent.every((a) => a.task_id === other.id && a.ttl > a.at)).toBe(true);
  });
});
