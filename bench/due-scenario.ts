import { cpuSpent } from '../shared/local/cpu.ts';
import { schedule } from '../infra/definitions.ts';
import { arrived, type Channel, fire, markOf, measure, resultOf, sleep } from './load.ts';
import { growing } from './receivers.ts';
import { account, cpuOf, describeCost, describeRun, fmt, note, target } from './report.ts';
import type { Bench } from './webhook-scenarios.ts';

/**
 * `due`: a minute's due work at scale. Two tasks make it: one compresses by content with the delay
 * strategy (each alarm opens a window of its own, whose first alarm is notified when it ends: a
 * `compress-flush` item), the other opens a workflow for each alarm with a reminder after the same
 * time (a `workflow-remind` item). 10,000 reports in 50 s make 10,000 items falling due within a
 * minute, WINDOW_MINUTES after them; each is done when its webhook event (ALARM compressed, WORKFLOW
 * remind_pending) reaches the receiver. Measured from the first item's due time: how late each is
 * done after its due time, that none is done twice, the scheduled runs' longest duration against the
 * function's deadline, and CPU and calls per item.
 */
const WINDOW_MINUTES = 2;
const ITEMS = 10_000;
const FIRING_SECONDS = 50;
/** The scheduled function's deadline: its runs end before it (what is left waits for the next run). */
const DEADLINE_MS = schedule.timeoutSeconds * 1000;

/**
 * A due item's event, its mark and its due time: a reminder's is its workflow's creation plus the
 * interval; a flush's is its window's end, WINDOW_MINUTES after the alarm that opened it was
 * processed, counted here from the report's sending (within a second of it).
 */
function dueChannel(b: Bench, sentAt: () => Map<number, number>): Channel {
  return growing(
    'due',
    1,
    () => b.receivers.webhook.received,
    (r) => {
      const j = r.json;
      const flush = r.path === '/due-flush' && j?.event === 'ALARM' && j.type === 'compressed';
      const remind = r.path === '/due-remind' && j?.event === 'WORKFLOW' && j.type === 'remind_pending';
      if (!flush && !remind) return undefined;
      const mark = markOf(String(j.data?.history?.ctn?.hostname ?? ''));
      if (!mark) return undefined;
      const since = remind
        ? (Number(j.data.workflow.created_at) + WINDOW_MINUTES * 60) * 1000
        : (sentAt().get(mark.seq) ?? Number.NaN) + WINDOW_MINUTES * 60_000;
      return { ...mark, target: '', at: r.at, since };
    },
  );
}

export async function due(b: Bench) {
  const { stack, receivers, scale } = b;
  const items = Math.round(ITEMS * scale);
  const compress = { enable: true, method: 3, strategy_cycle: WINDOW_MINUTES };
  const flushing = await stack.createTask(
    { webhook: `${receivers.webhook.url}/due-flush` },
    { compress: { ...compress, strategy: 2 } },
  );
  const reminding = await stack.createTask(
    { webhook: `${receivers.webhook.url}/due-remind` },
    {
      compress: { ...compress, strategy: 1 },
      workflow: {
        enable: true,
        reminds: [{ mode: 'once', status: 0, interval: WINDOW_MINUTES, reuse_receiver: 1 }],
      },
    },
  );
  receivers.webhook.received.length = 0;
  let sent = new Map<number, number>();
  const channel = dueChannel(b, () => sent);
  // Every report its own metric: the content method compresses by ctn, whose mark differs.
  const f = await fire(stack, [flushing, reminding], items / FIRING_SECONDS, FIRING_SECONDS);
  sent = f.sentAt;
  const firstDue = Math.min(...f.sentAt.values()) + WINDOW_MINUTES * 60_000;
  const wait = firstDue - Date.now() - 1000;
  if (wait < 0) note(`due: the reports were processed ${fmt(-wait / 1000)} s after the first item fell due`);
  await sleep(Math.max(0, wait));
  await stack.stats(true);
  const self0 = process.cpuUsage();
  const cpu0 = await stack.cpu();
  await arrived([channel], f, 90_000);
  const spent = cpuSpent(cpu0, await stack.cpu());
  const selfUsage = process.cpuUsage(self0);
  await sleep(2000); // late duplicates
  const stats = await stack.stats();
  const c = measure(channel, channel.arrivals(f.run), f.sentAt, 0);
  const r = resultOf(f, [c], {
    maxDepth: 0,
    endDepth: await stack.queueDepth(['webhook', 'due']).catch(() => 0),
    stats,
    spent,
    clientSeconds: (selfUsage.user + selfUsage.system) / 1e6,
  });
  const a = account(stats, c.delivered);
  describeRun('due', r, undefined, 'item');
  describeCost(a, stats, c.delivered, 'item');
  const runs = stats.invocations['tocsin-schedule'];
  const lateness = c.p99;
  const latest = Math.max(...channel.arrivals(f.run).map((x) => x.at - (x.since ?? x.at)));
  target(
    `due: ${items} items falling due within a minute all done within 60 s of falling due`,
    `${c.delivered} of ${f.sentAt.size} done, p99 ${fmt(lateness / 1000)} s, latest ${fmt(latest / 1000)} s after falling due`,
    c.lost === 0 && latest <= 60_000,
  );
  target('due: none done twice', `${c.duplicates} done twice`, c.duplicates === 0);
  target(
    `due: the scheduled runner never past its deadline (${DEADLINE_MS / 1000} s)`,
    runs ? `${runs.count} runs, longest ${fmt(runs.maxMs / 1000)} s` : 'no run',
    !!runs && runs.maxMs <= DEADLINE_MS,
  );
  target('due: CPU per item (the service itself) <= 3 ms', cpuOf(r), r.serviceMs <= 3);
}
