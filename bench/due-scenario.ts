import { schedule } from '../infra/consumers.ts';
import { DUE_SHARDS, keys } from '../shared/db/keys.ts';
import { arrived, type Channel, type Fired, fire, markOf, measure, resultOf, sleep } from './load.ts';
import { growing } from './receivers.ts';
import { cpuSpent } from './stack.ts';
import { account, cpuOf, describeCost, describeRun, detail, fmt, note, target } from './report.ts';
import type { Bench } from './webhook-scenarios.ts';

/**
 * `due`: a minute's due work at scale. Two tasks make it: one compresses by content with the delay
 * strategy (each alarm opens a window of its own, whose first alarm is notified when it ends: a
 * `compress-flush` item), the other opens a workflow for each alarm with a reminder after the same
 * time (a `workflow-remind` item). 10,000 reports in 50 s make 10,000 items falling due within a
 * minute, WINDOW_MINUTES after them. The benchmark reads each item's due time from the table once the
 * reports are processed; an item is done when its webhook event (ALARM compressed, WORKFLOW
 * remind_pending) reaches the receiver. Measured from the first item's due time: how late each is
 * done, that none is done twice, the scheduled runs' longest duration against the function's
 * deadline, and CPU and calls per item.
 */
const WINDOW_MINUTES = 3;
const ITEMS = 10_000;
const FIRING_SECONDS = 50;
/** The scheduled function's deadline: its runs end before it (what is left waits for the next run). */
const DEADLINE_MS = schedule.timeoutSeconds * 1000;

/** Due times of the run's items: flushes by the uuid of the alarm they notify, reminders by workflow. */
interface DueTimes {
  flushes: Map<string, number>;
  reminders: Map<number, number>;
}

/**
 * Collects the due times of the run's items while they wait in the table: every 2 s, each shard read
 * from a little before the latest due time of each kind it showed, the earlier of the two (a kind's
 * items are put with due times that grow with the alarms they come from: a flush's from the alarm's
 * time, a reminder's from the workflow's creation, so a backlog of reports shifts one against the
 * other), so a poll reads mostly the items put since the last one, not the whole table. An item waits
 * WINDOW_MINUTES before it falls due, so each is seen before it is done and removed.
 */
function watchDueTimes(f: Fired) {
  const uuids = new Set(f.uuids.values());
  const times: DueTimes = { flushes: new Map(), reminders: new Map() };
  const known = () => times.flushes.size + times.reminders.size;
  // Per shard, the latest due time seen of each kind (from the firing's start: none is due before).
  const fired = Math.floor(Math.min(...f.sentAt.values()) / 1000);
  const latest = Array.from({ length: DUE_SHARDS }, () => ({ flush: fired, remind: fired }));
  let stopped = false;
  const poll = async () => {
    const { queryDuePage } = await import('../shared/domain/due/repository.ts');
    for (let shard = 0; shard < DUE_SHARDS; shard++) {
      let start: Record<string, unknown> | undefined = {
        pk: keys.dueShard(shard),
        sk: keys.dueUntil(Math.min(latest[shard].flush, latest[shard].remind) - 10),
      };
      do {
        const page = await queryDuePage(shard, 9_999_999_999, 1000, start);
        for (const d of page.items) {
          const p = d.payload as { uuid?: string; workflow_id?: number };
          if (d.kind === 'compress-flush' && p.uuid && uuids.has(p.uuid)) {
            times.flushes.set(p.uuid, d.due_at);
            latest[shard].flush = Math.max(latest[shard].flush, d.due_at);
          }
          if (d.kind === 'workflow-remind' && p.workflow_id !== undefined) {
            times.reminders.set(p.workflow_id, d.due_at);
            latest[shard].remind = Math.max(latest[shard].remind, d.due_at);
          }
        }
        start = page.next;
      } while (start);
    }
  };
  const done = (async () => {
    while (!stopped && known() < f.sentAt.size) {
      await poll();
      await sleep(2000);
    }
  })();
  return {
    times,
    known,
    /** The earliest due time seen (Unix seconds), once any item is in the table. */
    first: () => Math.min(...times.flushes.values(), ...times.reminders.values()),
    async stop() {
      stopped = true;
      await done;
    },
  };
}

/** A due item's event, by the run mark of its alarm, with its due time. */
function dueChannel(b: Bench, times: () => DueTimes): Channel {
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
      const t = times();
      const dueAt = flush
        ? t.flushes.get(String(j.data.history.uuid))
        : t.reminders.get(Number(j.data.workflow.id));
      return { ...mark, target: '', at: r.at, since: (dueAt ?? Number.NaN) * 1000 };
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
  // Every report its own metric: the content method compresses by ctn, whose mark differs.
  const f = await fire(stack, [flushing, reminding], items / FIRING_SECONDS, FIRING_SECONDS);
  const watch = watchDueTimes(f);
  const channel = dueChannel(b, () => watch.times);
  // Measured from a second before the first item falls due (known once the first report is processed).
  while (!Number.isFinite(watch.first())) await sleep(1000);
  await sleep(Math.max(0, watch.first() * 1000 - Date.now() - 1000));
  const waiting = f.sentAt.size - watch.known();
  if (waiting > 0)
    note(
      `due: ${waiting} of ${f.sentAt.size} reports were still being processed when the first item fell due (their CPU counts in the due work's)`,
    );
  await stack.stats(true);
  const self0 = process.cpuUsage();
  const cpu0 = stack.cpu();
  await arrived([channel], f, 90_000);
  const spent = cpuSpent(cpu0, stack.cpu());
  const selfUsage = process.cpuUsage(self0);
  await watch.stop();
  await sleep(2000); // late duplicates
  const stats = await stack.stats();
  const arrivals = channel.arrivals(f.run);
  const c = measure(channel, arrivals, f.sentAt, 0);
  const r = resultOf(f, [c], {
    maxDepth: 0,
    endDepth: await stack.queueDepth(['webhook', 'due']),
    stats,
    spent,
    clientSeconds: (selfUsage.user + selfUsage.system) / 1e6,
  });
  const a = account(stats, c.delivered);
  describeRun('due', r, undefined, 'item');
  describeCost(a, stats, c.delivered, 'item');
  const runs = stats.invocations['tocsin-schedule'];
  const latest = Math.max(...arrivals.map((x) => x.at - (x.since ?? x.at)));
  const dueTimes = [...watch.times.flushes.values(), ...watch.times.reminders.values()];
  detail(
    `  due times known for ${dueTimes.length} of ${f.sentAt.size} items, falling due over ${Math.max(...dueTimes) - Math.min(...dueTimes)} s`,
  );
  target(
    `due: ${items} items falling due within a minute all done within 60 s of falling due`,
    `${c.delivered} of ${f.sentAt.size} done, p99 ${fmt(c.p99 / 1000)} s, latest ${fmt(latest / 1000)} s after falling due`,
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
