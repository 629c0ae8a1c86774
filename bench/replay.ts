/**
 * `npm run bench:replay` — what-if replays against their targets (docs/performance.md): a window of
 * 1,000 alarms answers within 5 s (in the request), one of 5,000 within 30 s (on the replay queue,
 * read back with GET /alarmtask/replay).
 *
 * A local stack in this process (DynamoDB Local and the SQS emulator in memory, the schedule off)
 * records 5,000 alarms of a task that uses the filter, compression with upgrade, delay recovery and
 * workflows, reported in bursts with the service clock moved between them. Each replay is then timed
 * from the request to the answer, edited configuration and all, `--runs` times (default 3); the
 * figures printed are the median and the worst, with the machine's load average beside them.
 * Options: --runs N, --alarms N (recorded; default 5,000).
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startLocalStack } from '../shared/local/stack.ts';
import { drained, StackClient } from '../test/support/replay.ts';
import { seedTestDirectory } from '../test/support/seed.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string' }, alarms: { type: 'string' } } });
const RUNS = Number(args.runs ?? 3);
const ALARMS = Number(args.alarms ?? 5_000);
const TARGETS = [
  { last: 1_000, seconds: 5 },
  { last: 5_000, seconds: 30 },
];

const stack = await startLocalStack({
  port: 0,
  dataDir: ':memory:',
  stateFile: false,
  schedule: false,
  env: { LOG_LEVEL: 'ERROR', ALARM_RATE_LIMIT: '1000000' },
});
try {
  await seedTestDirectory();
  const client = new StackClient(stack.url);
  const task = await client.createTask({
    name: `bench-replay-${Date.now()}`,
    receiver: {
      channels: { email: [1] },
      alarmgroup: [1],
      dispatch: [
        {
          conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '3' }] }],
          receiver: { alarmgroup: [2] },
        },
      ],
      mode: 2,
    },
    filter: {
      enable: true,
      mode: 1,
      not_match: 1,
      conditions: [{ rule: [{ field: 'level', operator: 'gte', threshold: '1' }], level: 9 }],
    },
    compress: {
      enable: true,
      method: 1,
      conditions: [{ rule: [{ field: 'ctn.host', operator: 'eq-self' }] }],
      strategy: 3,
      strategy_cycle: 10,
      strategy_count: 20,
      not_match: 1,
    },
    upgrade: { enable: true, strategies: [{ interval: 5, count: 30, level: 3, reuse_receiver: 1 }] },
    recovery: { enable: true, mode: 2, delay_interval: 15 },
    workflow: { enable: true, reminds: [{ mode: 'once', status: 0, interval: 30, reuse_receiver: 1 }] },
  });
  const t0 = performance.now();
  const burst = 250;
  for (let sent = 0; sent < ALARMS; sent += burst) {
    await client.report(
      task,
      Array.from({ length: Math.min(burst, ALARMS - sent) }, (_, i) => ({
        ctn: { host: `web-${(sent + i) % 8}`, service: 'checkout', seq: sent + i },
        level: (sent + i) % 4,
      })),
    );
    await drained(stack);
    await client.advance([120, 600, 60, 1_200][(sent / burst) % 4]);
  }
  console.info(`recorded ${ALARMS} alarms in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const edit = { filter_fields: ['compress.strategy_count'], compress: { strategy_count: 50 } };
  for (const target of TARGETS.filter((t) => t.last <= ALARMS)) {
    const times: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const start = performance.now();
      const answer = await client.replay({ task_id: task.id, last: target.last, config: edit });
      times.push((performance.now() - start) / 1000);
      if (answer.alarms.replayable !== target.last) throw new Error(`replayed ${answer.alarms.replayable}`);
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    const worst = times[times.length - 1];
    console.info(
      `replay of ${target.last} alarms: median ${median.toFixed(2)} s, worst ${worst.toFixed(2)} s ` +
        `(target ${target.seconds} s: ${worst <= target.seconds ? 'met' : 'missed'}); ` +
        `load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
    );
  }
} finally {
  await stack.stop();
}
