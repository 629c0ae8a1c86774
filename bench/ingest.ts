/**
 * `npm run bench:ingest` — the alarm path end to end, measured against its performance targets
 * (docs/performance.md): POST /alarm/report (signed like a real client) -> alarm queue -> pipeline ->
 * webhook events, robot messages and e-mails at real servers on 127.0.0.1, and the scheduled due work.
 *
 * The stack runs as `npm start` runs it (stack.ts); this process is the outside world: the load
 * generator (load.ts) and the receivers (receivers.ts). CPU figures count the service's own process;
 * the emulators' processes (DynamoDB Local's JVM, the SQS emulator) are printed beside them. The report
 * (report.ts) prints the targets first, PASS or FAIL, then notes and every run's details.
 *
 * Scenarios (all by default; `--only a,b` picks): `steady` 200 alarms/s for 60 s; `max` rising rates
 * until one is not sustained; `slow` a receiver that takes 50 ms per request; `tasks` the load shared
 * by 100 tasks; `notify` bookkeeping writes per notification job; `people` a robot and two e-mail
 * users at 100 alarms/s; `due` 10,000 due items falling due within a minute; `isolation`,
 * `slowmetric` and `compressed`, holding at scale (scale.ts).
 * Options: --only LIST, --seconds N (scales every scenario's duration, default 1 = full length),
 * --data disk|memory (default disk, as npm start).
 */
import { parseArgs } from 'node:util';
import { due } from './due-scenario.ts';
import { people } from './people-scenario.ts';
import { startReceivers } from './receivers.ts';
import { printReport } from './report.ts';
import { compressed, isolation, slowmetric } from './scale.ts';
import { BenchStack } from './stack.ts';
import { type Bench, max, notify, slow, steady, tasks, warmUp } from './webhook-scenarios.ts';

const { values: args } = parseArgs({
  options: {
    only: { type: 'string' },
    seconds: { type: 'string' },
    data: { type: 'string' },
  },
});
const SCENARIOS: Record<string, (b: Bench) => Promise<void>> = {
  steady,
  max,
  slow,
  tasks,
  notify,
  people,
  due,
  isolation,
  slowmetric,
  compressed,
};
const only = (args.only ?? Object.keys(SCENARIOS).join(',')).split(',');
const unknown = only.filter((s) => !SCENARIOS[s]);
if (unknown.length)
  throw new Error(`unknown scenario(s) ${unknown.join(', ')}: ${Object.keys(SCENARIOS).join(', ')}`);

const receivers = await startReceivers();
// The providers of the people's channels are the fakes; a robot here may send as often as it is asked.
const stack = await BenchStack.start(args.data ?? 'disk', {
  ...receivers.fakes.env,
  ROBOT_MAX_PER_MINUTE: '1000000',
});
try {
  await stack.seed();
  console.log(
    `local stack ${stack.url} (pid ${stack.state.pid}, JVM ${stack.state.javaPid}, SQS emulator ${stack.state.sqsPid}); data ${args.data ?? 'disk'}`,
  );
  const bench: Bench = { stack, receivers, scale: Number(args.seconds ?? 1) };
  // Warm up first (JIT compilers of node and of DynamoDB Local's JVM, connection pools, caches):
  // the figures are of a running service, not of its first seconds.
  await warmUp(bench);
  for (const name of only) await SCENARIOS[name](bench);
} finally {
  await stack.stop();
  await receivers.stop();
}
printReport();
