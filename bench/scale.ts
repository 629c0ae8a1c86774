/**
 * Scenarios of `npm run bench:ingest` about holding at scale (docs/performance.md): `isolation`, one
 * task whose receiver is down among 30 healthy ones, whose p99 report->webhook must stay within twice
 * its value without the dead receiver; `slowmetric`, one task whose compression metric is hot (every
 * alarm of it through one metric's state, contended by the consumers) among 100 tasks, whose p99 must
 * stay at or below 250 ms; `compressed`, 100 tasks that compress their alarms, for what that path
 * costs per alarm. ingest.ts runs them with its load generator, receivers and accounting.
 */
import { TestReceiver } from '../test/support/receiver.ts';

interface TaskRef {
  id: number;
  token: string;
}

/** What a run measured (ingest.ts RunResult: the fields read here). */
interface Run {
  e2eP99: number;
  e2eP50: number;
  lost: number;
  delivered: number;
}

export interface BenchContext<R extends Run, A> {
  only: Set<string>;
  scale: number;
  receiver: TestReceiver;
  createTask(channels: Record<string, unknown>, extra?: Record<string, unknown>): Promise<TaskRef>;
  openLoop(tasks: TaskRef[], receiver: TestReceiver, rate: number, seconds: number): Promise<R>;
  /** What a run's calls cost per alarm (ingest.ts account), printed with its details. */
  account(r: R): A;
  describeRun(label: string, r: R, a?: A): void;
  target(name: string, value: string, pass: boolean): void;
  note(text: string): void;
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');

export async function scaleScenarios<R extends Run, A extends { costPerMillion: number }>(
  ctx: BenchContext<R, A>,
): Promise<void> {
  const { receiver } = ctx;
  if (ctx.only.has('isolation')) {
    const healthy: TaskRef[] = [];
    for (let i = 0; i < 30; i++) healthy.push(await ctx.createTask({ webhook: `${receiver.url}/h${i}` }));
    // Down: connections are accepted and never answered (every attempt waits out the 200 ms timeout).
    const dead = await new TestReceiver().start();
    dead.behaviour = { delayMs: 60_000 };
    try {
      const down = await ctx.createTask({ webhook: `${dead.url}/down` });
      const seconds = 30 * ctx.scale;
      const without = await ctx.openLoop(healthy, receiver, 190, seconds);
      ctx.describeRun('30 healthy tasks', without);
      // The same load, and the dead receiver's task at its share of it beside them.
      const [withDead] = await Promise.all([
        ctx.openLoop(healthy, receiver, 190, seconds),
        ctx.openLoop([down], dead, 10, seconds),
      ]);
      ctx.describeRun('30 healthy tasks, one receiver down beside them', withDead);
      ctx.target(
        'one receiver down among 30 healthy tasks: their p99 <= 2x their p99 without it, 0 lost',
        `${fmt(withDead.e2eP99)} ms against ${fmt(without.e2eP99)} ms, ${withDead.lost} lost`,
        withDead.e2eP99 <= 2 * without.e2eP99 && withDead.lost === 0,
      );
    } finally {
      await dead.stop();
    }
  }
  if (ctx.only.has('slowmetric')) {
    const others: TaskRef[] = [];
    for (let i = 0; i < 99; i++) others.push(await ctx.createTask({ webhook: `${receiver.url}/o${i}` }));
    // Every alarm of this task goes through one metric's state, each notified (cycle-count, N = 1), a
    // tenth of the load: several consumer batches hold its alarms at once and contend for the metric.
    // The total is the `tasks` scenario's 200/s.
    const hotReceiver = await new TestReceiver().start();
    try {
      const hot = await ctx.createTask(
        { webhook: `${hotReceiver.url}/hot` },
        {
          compress: {
            enable: true,
            method: 4,
            strategy: 3,
            strategy_count: 1,
            strategy_cycle: 60,
            not_match: 1,
          },
        },
      );
      const seconds = 30 * ctx.scale;
      const [rest, slow] = await Promise.all([
        ctx.openLoop(others, receiver, 180, seconds),
        ctx.openLoop([hot], hotReceiver, 20, seconds),
      ]);
      ctx.describeRun('99 tasks beside a hot metric', rest);
      ctx.describeRun('the hot metric (20/s into one metric)', slow);
      ctx.target(
        'one slow metric among 100 tasks: the other tasks p99 <= 250 ms, 0 lost',
        `${fmt(rest.e2eP99)} ms (the hot metric's own p99 ${fmt(slow.e2eP99)} ms), ${rest.lost} lost`,
        rest.e2eP99 <= 250 && rest.lost === 0,
      );
    } finally {
      await hotReceiver.stop();
    }
  }
  if (ctx.only.has('compressed')) {
    // 100 tasks compressing under a metric of their own each (full method; the first alarm of each
    // 5-minute window notified), 200 alarms/s round robin: every alarm goes through its metric's
    // transaction. Only the notified alarms reach the receiver: the run waits for those.
    const tasks: TaskRef[] = [];
    for (let i = 0; i < 100; i++)
      tasks.push(
        await ctx.createTask(
          { webhook: `${receiver.url}/c${i}` },
          {
            compress: {
              enable: true,
              method: 4,
              strategy: 3,
              strategy_count: 1,
              strategy_cycle: 5,
              not_match: 1,
            },
          },
        ),
      );
    const r = await ctx.openLoop(tasks, receiver, 200, 30 * ctx.scale);
    const a = ctx.account(r);
    ctx.describeRun('100 compressed tasks', r, a);
    ctx.note(
      `100 compressed tasks: AWS cost per 1M alarms $${a.costPerMillion.toFixed(2)} (before logs, tracing, storage)`,
    );
  }
}
