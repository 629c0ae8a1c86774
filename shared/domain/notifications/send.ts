import { performance } from 'node:perf_hooks';
import { nowMs, nowSeconds } from '../../clock.ts';
import type { NotificationJob } from '../../contracts/messages.ts';
import type { User } from '../directory/model.ts';
import { ROBOT_CHANNELS, type RobotChannel, USER_CHANNELS } from '../../contracts/receivers.ts';
import { openRobot } from '../channels/robots.ts';
import { maskRobot } from '../channels/redact.ts';
import { sendToRobot } from './providers/robot.ts';
import { maskEmail, maskPhone, type SendOutcome } from './providers/types.ts';
import { plainText } from './render.ts';
import { type LinkedMessage, withClaimLink } from './claim-links.ts';
import type { NotifyDeps } from './notify-deps.ts';
import type { Run } from './run.ts';

/**
 * Sending one job's message through its channel's provider, each attempt recorded in the run: robots
 * tried in order until one takes it, people one message each (e-mail, SMS, voice) or one work notice
 * for all of them.
 */

const SEND_CONCURRENCY = 5;

const notConfigured: SendOutcome = { outcome: 'skipped', code: 'not_configured', detail: 'not configured' };

async function timed(call: () => Promise<SendOutcome>): Promise<[SendOutcome, number]> {
  const t0 = performance.now();
  const r = await call();
  return [r, performance.now() - t0];
}

export async function sendChannel(
  job: NotificationJob,
  m: LinkedMessage,
  run: Run,
  deps: NotifyDeps,
): Promise<void> {
  const channel = job.channel;
  if ((ROBOT_CHANNELS as readonly string[]).includes(channel)) {
    return sendRobots(channel as RobotChannel, job, m, run, deps);
  }
  if (!(USER_CHANNELS as readonly string[]).includes(channel)) return;
  const uids = [...new Set(job.users ?? [])];
  if (uids.length === 0) {
    run.record(
      undefined,
      'none',
      job.oncall?.length
        ? { outcome: 'skipped', code: 'nobody_on_call', detail: 'nobody on call' }
        : { outcome: 'skipped', code: 'no_receiver', detail: 'no users' },
    );
    return;
  }
  const users = new Map((await deps.getUsers(uids)).map((u) => [u.uid, u]));
  switch (channel) {
    case 'dingworker':
    case 'yachworker':
    case 'wechat':
      return sendWorkNotice(channel, uids, users, m, run, deps);
    case 'email': {
      const mailer = deps.providers.mailer();
      return perUser(
        uids,
        users,
        run,
        mailer,
        (u) => u.email,
        'no_email',
        maskEmail,
        async (to, uid) => mailer!.send(to, await withClaimLink(m, uid)),
      );
    }
    case 'sms': {
      const sms = deps.providers.sms();
      return perUser(
        uids,
        users,
        run,
        sms,
        (u) => u.phone,
        'no_phone',
        maskPhone,
        async (p, uid) => sms!.send(p, plainText(await withClaimLink(m, uid))),
      );
    }
    case 'phone': {
      const voice = deps.providers.voice();
      const text = plainText(m);
      return perUser(
        uids,
        users,
        run,
        voice,
        (u) => u.phone,
        'no_phone',
        maskPhone,
        (p) => voice!.send(p, text),
      );
    }
  }
}

async function sendRobots(
  channel: RobotChannel,
  job: NotificationJob,
  m: LinkedMessage,
  run: Run,
  deps: NotifyDeps,
) {
  const robots = job.robots ?? [];
  const base = deps.providers.robotBase(channel);
  const key = 'robots';
  if (run.done.has(key)) return;
  if (robots.length === 0) {
    run.record(key, 'none', { outcome: 'skipped', code: 'no_receiver', detail: 'no robots' });
    return;
  }
  if (!base) {
    run.record(key, robots.map((r) => maskRobot(openRobot(r).webhook)).join(', '), notConfigured);
    return;
  }
  // Robots are tried in order until one takes the message; each try is recorded, and the channel's
  // outcome is decided at the end: delivered, retried (some failure was transient) or refused.
  const cfg = deps.cfg.notify;
  // The group's link (uid 0): whoever claims with it signs in first.
  const sent = await withClaimLink(m, 0);
  let transient = false;
  for (const sealed of robots) {
    // Robots travel sealed: each is opened when it is tried, and only then.
    const robot = openRobot(sealed);
    const target = maskRobot(robot.webhook);
    if (!(await deps.throttle.take(channel, robot, nowSeconds()))) {
      transient = true;
      const r: SendOutcome = {
        outcome: 'throttled',
        code: 'throttled',
        detail: 'robot budget of this minute spent',
      };
      run.record(key, target, r, 0, false);
      continue;
    }
    const [r, ms] = await timed(() =>
      sendToRobot(base, robot, sent, { timeoutMs: cfg.httpTimeoutMs, linkUrl: cfg.linkUrl, nowMs: nowMs() }),
    );
    run.record(key, target, r, ms, false);
    if (r.outcome === 'delivered') {
      run.settle(key, 'delivered');
      return;
    }
    if (r.outcome === 'rate_limited') await deps.throttle.backOff(channel, robot, nowSeconds());
    if (r.outcome !== 'rejected') transient = true;
  }
  run.settle(key, transient ? 'failed' : 'rejected');
}

async function perUser(
  uids: number[],
  users: Map<number, User>,
  run: Run,
  provider: unknown,
  address: (u: User) => string,
  missingCode: string,
  mask: (a: string) => string,
  send: (address: string, uid: number) => Promise<SendOutcome>,
) {
  const todo = uids.filter((uid) => !run.done.has(`uid:${uid}`));
  if (todo.length === 0) return;
  if (!provider) {
    run.record(undefined, `uids ${todo.join(',')}`, notConfigured);
    for (const uid of todo) run.done.add(`uid:${uid}`);
    return;
  }
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const uid = todo[next++];
      const key = `uid:${uid}`;
      const user = users.get(uid);
      if (!user) {
        run.record(key, `uid ${uid}`, {
          outcome: 'skipped',
          code: 'unknown_user',
          detail: `user [${uid}] not found`,
        });
        continue;
      }
      const to = address(user).trim();
      if (!to) {
        run.record(key, `uid ${uid}`, {
          outcome: 'skipped',
          code: missingCode,
          detail: `user [${uid}] has none`,
        });
        continue;
      }
      const [r, ms] = await timed(() => send(to, uid));
      run.record(key, `uid ${uid} ${mask(to)}`, r, ms);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, todo.length) }, worker));
}

async function sendWorkNotice(
  channel: 'dingworker' | 'yachworker' | 'wechat',
  uids: number[],
  users: Map<number, User>,
  m: LinkedMessage,
  run: Run,
  deps: NotifyDeps,
) {
  const key = 'users';
  if (run.done.has(key)) return;
  const provider = deps.providers.workNotice(channel);
  if (!provider) {
    run.record(key, `uids ${uids.join(',')}`, notConfigured);
    return;
  }
  const recipients: string[] = [];
  const served: number[] = [];
  for (const uid of uids) {
    const u = users.get(uid);
    const account = (channel === 'wechat' ? u?.wechatid : u?.user)?.trim();
    if (!u || !account) {
      const code = u ? 'no_account' : 'unknown_user';
      run.record(undefined, `uid ${uid}`, {
        outcome: 'skipped',
        code,
        detail: `user [${uid}] has no ${channel} account`,
      });
      continue;
    }
    recipients.push(account);
    served.push(uid);
  }
  if (recipients.length === 0) {
    run.done.add(key);
    return;
  }
  if (!m.claimLink) {
    const [r, ms] = await timed(() => provider.send(recipients, m, run.job.job_id));
    return run.record(key, `uids ${served.join(',')}`, r, ms);
  }
  // Claim links: one call per person (`uid:<uid>`), each with its own message and message id.
  for (const [i, uid] of served.entries()) {
    if (run.done.has(`uid:${uid}`)) continue;
    const own = await withClaimLink(m, uid);
    const [r, ms] = await timed(() => provider.send([recipients[i]], own, `${run.job.job_id}:${uid}`));
    run.record(`uid:${uid}`, `uid ${uid}`, r, ms);
  }
}
