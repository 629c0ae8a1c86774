import { TestReceiver } from '../test/support/receiver.ts';
import { openLoop } from './load.ts';
import { webhookChannel } from './receivers.ts';
import { account, describeRun, fmt, note, target, writesOf } from './report.ts';
import type { TaskRef } from './stack.ts';
import type { Bench } from './webhook-scenarios.ts';

/**
 * Scenarios about holding at scale (docs/performance.md): `isolation`, one task whose receiver is down
 * among 30 healthy ones, whose p99 report->webhook must stay within twice its value without the dead
 * receiver; `slowmetric`, one task whose compression metric is hot (every alarm of it through one
 * metric's state, contended by the consumers) among 100 tasks, whose p99 must stay at or below 250 ms;
 * `compressed`, 100 tasks that compress their alarms, for what that path costs per alarm.
 */

/** Full compression (every alarm of the task under one metric), cycle-count: the first of each cycle notified. */
const compressAll = (cycleMinutes: number) => ({
  compress: { enable: true, method: 4, strategy: 3, strategy_count: 1, strategy_cycle: cycleMinutes, not_match: 1 },
});

export async function isolation({ stack, receivers, scale }: Bench) {
  const healthy: TaskRef[] = [];
  for (let i = 0; i < 30; i++)
    healthy.push(await stack.createTask({ webhook: `${receivers.webhook.url}/h${i}` }));
  // Down: connections are accepted and never answered (every attempt waits out the delivery timeout).
  const dead = await new TestReceiver().start();
  dead.behaviour = { delayMs: 60_000 };
  try {
    const down = await stack.createTask({ webhook: `${dead.url}/down` });
    const seconds = 30 * scale;
    const channel = () => [webhookChannel(receivers.webhook)];
    const without = await openLoop(stack, healthy, channel(), 190, seconds);
    describeRun('30 healthy tasks', without);
    // The same load, and the dead receiver's task at its share of it beside them (nothing arrives
    // there: its run waits only a moment for arrivals).
    const [withDead] = await Promise.all([
      openLoop(stack, healthy, channel(), 190, seconds),
      openLoop(stack, [down], [webhookChannel(dead)], 10, seconds, { patienceMs: 1_000 }),
    ]);
    describeRun('30 healthy tasks, one receiver down beside them', withDead);
    const a = without.channels[0];
    const b = withDead.channels[0];
    target(
      'one receiver down among 30 healthy tasks: their p99 <= 2x their p99 without it, 0 lost',
      `${fmt(b.p99)} ms against ${fmt(a.p99)} ms, ${b.lost} lost`,
      b.p99 <= 2 * a.p99 && b.lost === 0,
    );
  } finally {
    await dead.stop();
  }
}

export async function slowmetric({ stack, receivers, scale }: Bench) {
  const others: TaskRef[] = [];
  for (let i = 0; i < 99; i++)
    others.push(await stack.createTask({ webhook: `${receivers.webhook.url}/o${i}` }));
  // Every alarm of this task goes through one metric's state, each notified (cycle-count, N = 1), a
  // tenth of the load: several consumer batches hold its alarms at once and contend for the metric.
  // The total is the `tasks` scenario's 200/s.
  const hotReceiver = await new TestReceiver().start();
  try {
    const hot = await stack.createTask({ webhook: `${hotReceiver.url}/hot` }, compressAll(60));
    const seconds = 30 * scale;
    const [rest, slow] = await Promise.all([
      openLoop(stack, others, [webhookChannel(receivers.webhook)], 180, seconds),
      openLoop(stack, [hot], [webhookChannel(hotReceiver)], 20, seconds, { patienceMs: 3_000 }),
    ]);
    describeRun('99 tasks beside a hot metric', rest);
    describeRun('the hot metric (20/s into one metric)', slow);
    const r = rest.channels[0];
    target(
      'one slow metric among 100 tasks: the other tasks p99 <= 250 ms, 0 lost',
      `${fmt(r.p99)} ms (the hot metric's own p99 ${fmt(slow.channels[0].p99)} ms), ${r.lost} lost`,
      r.p99 <= 250 && r.lost === 0,
    );
  } finally {
    await hotReceiver.stop();
  }
}

export async function compressed({ stack, receivers, scale }: Bench) {
  // 100 tasks compressing under a metric of their own each (the first alarm of each 5-minute window
  // notified), 200 alarms/s round robin: every alarm goes through its metric's transaction. Only the
  // notified alarms reach the receiver: the run waits a moment for them, and counts per accepted alarm.
  const tasks: TaskRef[] = [];
  for (let i = 0; i < 100; i++)
    tasks.push(await stack.createTask({ webhook: `${receivers.webhook.url}/c${i}` }, compressAll(5)));
  const r = await openLoop(stack, tasks, [webhookChannel(receivers.webhook)], 200, 30 * scale, {
    patienceMs: 3_000,
  });
  const a = account(r.stats, r.accepted);
  describeRun('100 compressed tasks (figures per accepted alarm)', r, a);
  note(
    `100 compressed tasks: ${writesOf(a)} per alarm; AWS cost per 1M alarms $${fmt(a.costPerMillion, 2)} (before logs, tracing, storage)`,
  );
}
