import { openLoop, type RunResult, sleep } from './load.ts';
import { webhookChannel } from './receivers.ts';
import type { Receivers } from './receivers.ts';
import { account, cpuOf, describeRun, fmt, note, target, writesOf } from './report.ts';
import type { BenchStack, TaskRef } from './stack.ts';

/**
 * The webhook path's scenarios (docs/performance.md): one task at 200 alarms/s, the highest sustained
 * rate, a slow receiver, 100 tasks sharing the load, and the bookkeeping of notification jobs.
 */

export interface Bench {
  stack: BenchStack;
  receivers: Receivers;
  /** Every scenario's duration is multiplied by it (`--seconds`). */
  scale: number;
}

const sustained = (r: RunResult) => {
  const c = r.channels[0];
  return c.lost === 0 && r.refused === 0 && c.p99 <= 1000 && r.endDepth < r.rate;
};

/** The first alarms of a fresh stack warm it up (JIT compilers, pools, caches): not measured. */
export async function warmUp({ stack, receivers, scale }: Bench) {
  const warm = await stack.createTask({ webhook: `${receivers.webhook.url}/warm` });
  await openLoop(stack, [warm], [webhookChannel(receivers.webhook)], 200, 20 * scale);
}

export async function steady({ stack, receivers, scale }: Bench) {
  const t = await stack.createTask({ webhook: `${receivers.webhook.url}/steady` });
  receivers.webhook.received.length = 0;
  const r = await openLoop(stack, [t], [webhookChannel(receivers.webhook)], 200, 60 * scale);
  const a = account(r.stats, r.delivered);
  const w = r.channels[0];
  describeRun('steady', r, a);
  target(
    '200/s for 60 s: p99 report->webhook <= 250 ms, 0 lost, 0 duplicates',
    `${fmt(w.p99)} ms, ${w.lost} lost, ${w.duplicates} duplicates`,
    w.p99 <= 250 && w.lost === 0 && w.duplicates === 0,
  );
  target('CPU per delivered alarm (the service itself) <= 4 ms', cpuOf(r), r.serviceMs <= 4);
  target('table writes per alarm (webhook only) <= 2', writesOf(a), a.itemsPerAlarm <= 2);
  target('AWS cost per 1M alarms <= $2.50', `$${fmt(a.costPerMillion, 2)}`, a.costPerMillion <= 2.5);
}

export async function max({ stack, receivers, scale }: Bench) {
  const t = await stack.createTask({ webhook: `${receivers.webhook.url}/max` });
  let best = 0;
  for (const rate of [300, 400, 500, 600, 700, 800]) {
    receivers.webhook.received.length = 0;
    const r = await openLoop(stack, [t], [webhookChannel(receivers.webhook)], rate, 20 * scale);
    describeRun(`max ${rate}`, r);
    if (!sustained(r)) break;
    best = rate;
  }
  target('highest sustained rate (p99 <= 1 s, nothing lost, queue flat) >= 500/s', `${best}/s`, best >= 500);
}

export async function slow({ stack, receivers, scale }: Bench) {
  const t = await stack.createTask({ webhook: `${receivers.slow.url}/slow` });
  const r = await openLoop(stack, [t], [webhookChannel(receivers.slow)], 250, 20 * scale);
  describeRun('slow receiver (50 ms)', r);
  const w = r.channels[0];
  target(
    'a receiver taking 50 ms gets >= 200 events/s from one task',
    `${fmt(w.perSecond)}/s`,
    w.perSecond >= 200 && w.lost === 0,
  );
}

export async function tasks({ stack, receivers, scale }: Bench) {
  const many: TaskRef[] = [];
  for (let i = 0; i < 100; i++)
    many.push(await stack.createTask({ webhook: `${receivers.webhook.url}/t${i}` }));
  // The tasks' first seconds (task caches, rate-limit leases) are not their running cost: 5 s first.
  await openLoop(stack, many, [webhookChannel(receivers.webhook)], 200, 5 * scale);
  receivers.webhook.received.length = 0;
  const r = await openLoop(stack, many, [webhookChannel(receivers.webhook)], 200, 30 * scale);
  const a = account(r.stats, r.delivered);
  const w = r.channels[0];
  describeRun('100 tasks', r, a);
  target(
    '100 tasks at 200/s: p99 <= 250 ms, 0 lost, 0 duplicates',
    `${fmt(w.p99)} ms, ${w.lost} lost, ${w.duplicates} duplicates`,
    w.p99 <= 250 && w.lost === 0 && w.duplicates === 0,
  );
  target('100 tasks: table writes per alarm <= 2.05 WCU', writesOf(a), a.wcuPerAlarm <= 2.05);
  note(`100 tasks: CPU per alarm ${cpuOf(r)}; AWS cost per 1M alarms $${fmt(a.costPerMillion, 2)}`);
}

export async function notify({ stack, receivers, scale }: Bench) {
  const t = await stack.createTask({ webhook: `${receivers.webhook.url}/notify`, email: [1], sms: [2] });
  receivers.webhook.received.length = 0;
  const r = await openLoop(stack, [t], [webhookChannel(receivers.webhook)], 50, 10 * scale);
  await sleep(2000);
  const s = await stack.stats();
  const jobs = r.delivered * 2;
  // The jobs' bookkeeping: job items, and the batch log items that carry their first attempts.
  const jobWrites = Object.entries(s.dynamodb)
    .filter(([k]) => / (NJOB|NLOG)$/.test(k) && !/^(Get|Query|BatchGet)/.test(k))
    .reduce((n, [, v]) => n + v.items, 0);
  describeRun('notify (e-mail + SMS jobs)', r, account(s, r.delivered));
  target('bookkeeping writes per notification job <= 1', fmt(jobWrites / jobs, 2), jobWrites / jobs <= 1);
}
