import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ClaimLinkConfig, resetConfig } from '../../config/env.ts';
import type { NotificationJob } from '../../contracts/messages.ts';
import { linkKey, readClaimToken } from '../auth/claim-token.ts';
import { loadSealKey } from '../auth/seal.ts';
import type { User } from '../directory/model.ts';
import type { Task } from '../tasks/model.ts';
import { claimLinkOf } from './claim-links.ts';
import { deliverNotification, type NotifyDeps } from './delivery.ts';
import type { RenderedMessage } from './render.ts';
import type { JobRun } from './repository.ts';
import { smsRequest } from './providers/sms.ts';

/**
 * Claim links in messages (API guide §11.7), through the notification consumer with in-memory
 * adapters: each recipient's own link, minted at the send; the job record without a token.
 */
const BASE = 'https://alarms.example.com/api';
const CLAIM_LINK: ClaimLinkConfig = {
  keyIds: [1],
  ttlSeconds: 86_400,
  addressPerMinute: 60,
  linkPerMinute: 10,
};
beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = randomBytes(32).toString('base64');
  resetConfig();
});

const users: User[] = [
  { uid: 11, username: 'Ann', user: 'ann', email: 'ann@example.com', phone: '13800000011', wechatid: 'ann' },
  { uid: 12, username: 'Bo', user: 'bo', email: 'bo@example.com', phone: '13800000012', wechatid: 'bo' },
].map((u) => ({ ...u, pinyin: '', department: '', role: 0, created_at: 0, updated_at: 0 }));

interface Sent {
  to: string;
  message: RenderedMessage | string;
  id?: string;
}

function world(opts: { template?: Task['template'] } = {}) {
  const sent: Sent[] = [];
  const runs: JobRun[] = [];
  const deps: NotifyDeps = {
    cfg: {
      envName: 'test',
      timeZone: 'UTC',
      notifyBackoffSeconds: [5],
      notify: { robots: {}, robotMaxPerMinute: 20, robotBlockSeconds: 60, httpTimeoutMs: 1000 },
      publicBaseUrl: BASE,
      claimLink: CLAIM_LINK,
    },
    getTask: async (id) =>
      ({ id, name: 'disk', template: opts.template ?? {}, compress: { enable: false } }) as unknown as Task,
    getTemplate: async () => undefined,
    getUsers: async (uids) => users.filter((u) => uids.includes(u.uid)),
    getJobState: async () => undefined,
    recordJobRun: async (run) => {
      runs.push(run);
    },
    logRuns: async (logged) => {
      runs.push(...logged);
    },
    loggedRun: async () => undefined,
    providers: {
      robotBase: () => undefined,
      workNotice: () => ({
        send: async (recipients, m, id) => {
          sent.push({ to: recipients.join('|'), message: m, id });
          return { outcome: 'delivered', code: '0' };
        },
      }),
      mailer: () => ({
        send: async (to, m) => {
          sent.push({ to, message: m });
          return { outcome: 'delivered', code: '0' };
        },
      }),
      sms: () => ({
        // As SNS takes it (providers/sms.ts): cut to 300 characters.
        send: async (to, text) => {
          sent.push({ to, message: smsRequest(to, text, '+86').input.Message ?? '' });
          return { outcome: 'delivered', code: '0' };
        },
      }),
      voice: () => undefined,
    },
    throttle: { take: async () => true, backOff: async () => undefined },
    requeue: async () => undefined,
    deadLetter: async () => undefined,
  };
  return { deps, sent, runs };
}

const job = (channel: NotificationJob['channel'], extra: Partial<NotificationJob> = {}): string =>
  JSON.stringify({
    kind: 'notify',
    job_id: `wf:7:PIPE#1:${channel}`,
    task_id: 1,
    scene: 'generated',
    channel,
    users: [11, 12],
    context: {
      task: { id: 1, name: 'disk' },
      history: { level: 2, ctn: { host: 'web-1' } },
      workflow: { id: 7, status: 0 },
    },
    claim: { workflow_id: 7, round: 0 },
    ...extra,
  });

const TOKEN = /\/claim\?t=([A-Za-z0-9_-]+)/;
const textOf = (s: Sent) =>
  typeof s.message === 'string' ? s.message : `${s.message.title}\n${s.message.body}`;

async function tokenIn(s: Sent) {
  const token = TOKEN.exec(textOf(s))?.[1];
  const key = linkKey(await loadSealKey(), 1);
  return readClaimToken(token, (id) => (id === 1 ? key : undefined));
}

describe('claim links in messages', () => {
  it('give each e-mail recipient a link of their own, and keep none in the job record', async () => {
    // Arrange
    const w = world();
    // Act
    expect(await deliverNotification(job('email'), 1, w.deps)).toBe('done');
    // Assert: Ann's link is Ann's, Bo's is Bo's, for this workflow, its round and the channel.
    const links = await Promise.all(w.sent.map(tokenIn));
    expect(w.sent.map((s) => s.to)).toEqual(['ann@example.com', 'bo@example.com']);
    expect(
      links.map((l) => l && { uid: l.uid, wf: l.workflowId, round: l.round, channel: l.channel }),
    ).toEqual([
      { uid: 11, wf: 7, round: 0, channel: 'email' },
      { uid: 12, wf: 7, round: 0, channel: 'email' },
    ]);
    expect(textOf(w.sent[0])).toContain(`<a href="${BASE}/claim?t=`);
    const stored = JSON.stringify(w.runs[0].message);
    expect(stored).toContain(`${BASE}/claim?t=…`);
    expect(TOKEN.test(stored)).toBe(false);
    expect(stored).not.toContain('tocsin-claim-link');
  });

  it('send a work notice with links one person at a time, each with its own message id', async () => {
    const w = world();
    expect(await deliverNotification(job('wechat'), 1, w.deps)).toBe('done');
    expect(w.sent.map((s) => [s.to, s.id])).toEqual([
      ['ann', 'wf:7:PIPE#1:wechat:11'],
      ['bo', 'wf:7:PIPE#1:wechat:12'],
    ]);
    expect((await Promise.all(w.sent.map(tokenIn))).map((l) => l?.uid)).toEqual([11, 12]);
  });

  it('keep an SMS link whole before a long content, which is what gets cut', async () => {
    const w = world();
    const ctn = { log: 'x'.repeat(600) };
    const body = job('sms', {
      context: { task: { id: 1, name: 'disk' }, history: { level: 2, ctn }, workflow: { id: 7, status: 0 } },
    });
    expect(await deliverNotification(body, 1, w.deps)).toBe('done');
    expect([...textOf(w.sent[0])]).toHaveLength(300);
    expect((await tokenIn(w.sent[0]))?.uid).toBe(11);
  });

  it('are not in messages of jobs without a pending workflow, nor where a custom template leaves them out', async () => {
    // A message about no pending workflow: the default has no claim line.
    const plain = world();
    await deliverNotification(job('email', { claim: undefined, scene: 'not_compress' }), 1, plain.deps);
    expect(plain.sent.map(textOf).some((t) => t.includes('/claim'))).toBe(false);
    // A custom template without `{workflow.claim_url}`: nothing minted, nothing marked.
    const custom = world({
      template: { udf: { generated: { email: { format: 1, template: 'wf {workflow.id}' } } } } as never,
    });
    await deliverNotification(job('email'), 1, custom.deps);
    expect(custom.sent.map(textOf)).toEqual(['[test] disk: workflow #7 created\nwf 7', expect.any(String)]);
  });

  it('are made for jobs about a pending workflow with a base URL, never for calls', () => {
    const cfg = { publicBaseUrl: BASE, claimLink: CLAIM_LINK };
    const claim = { workflow_id: 7, round: 1 };
    expect(claimLinkOf({ claim, channel: 'email' }, cfg)).toMatchObject({
      target: claim,
      base: BASE,
    });
    expect(claimLinkOf({ claim, channel: 'phone' }, cfg)).toBeUndefined();
    expect(claimLinkOf({ claim, channel: 'email' }, { claimLink: CLAIM_LINK })).toBeUndefined();
    expect(claimLinkOf({ channel: 'email' }, cfg)).toBeUndefined();
  });
});
