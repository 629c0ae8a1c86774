import { buildConsole } from '../../scripts/build-console.ts';
import { reapJvm } from './java.ts';
import { useBundles } from './bundles.ts';
import { type LocalStack, startLocalStack } from './stack.ts';

/**
 * `npm start`: the whole service on this machine, no configuration. `npm start -- --bundles` (or
 * TOCSIN_BUNDLES=1) runs the functions' bundles as the CDK deploys them instead of their sources.
 *
 * The signal handlers come first, before anything starts: a signal that arrived between the "ready"
 * line and their installation would end the process by its default action, with no clean stop.
 */
const started = Date.now();

/** The stack's start, once under way; the stack, once up. */
let starting: Promise<LocalStack> | undefined;
let stack: LocalStack | undefined;
let stoppingSince: number | undefined;
/**
 * A SIGINT within this time of the first is the same Ctrl-C delivered twice, not a second one: a
 * terminal's Ctrl-C reaches every process of its group, and npm passes the SIGINT it gets on too.
 */
const SAME_CTRL_C_MS = 1000;
/**
 * The first signal stops in an order that loses nothing (stack.stop()); a second one exits at once
 * (the queues and the table are durable, so even that loses only what was in flight, which the next
 * start picks up again). A signal during the start stops the stack as soon as it is up (at once when
 * nothing has started yet).
 */
const shutdown = async (signal: string, code = 0, repeatForces = true) => {
  if (stoppingSince !== undefined) {
    if (!repeatForces || (signal === 'SIGINT' && Date.now() - stoppingSince < SAME_CTRL_C_MS)) return;
    console.log(`${signal} again: exiting now`);
    reapJvm(stack?.javaPid);
    process.exit(130);
  }
  stoppingSince = Date.now();
  console.log(`\n${signal}: stopping ...`);
  // A start that fails reports its own error (below); there is nothing to stop then.
  const up = await starting?.catch(() => undefined);
  await up?.stop((stage, detail) => {
    if (stage === 'http' && detail) {
      console.log(
        `  http: stopped accepting at ${detail.at}; in-flight requests finished (${detail.cut} cut)`,
      );
    } else if (stage !== 'lock' && stage !== 'state') {
      console.log(`  ${stage}: stopped`);
    }
  });
  process.exit(code);
};
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('uncaughtException', (err) => {
  console.error('fatal:', err);
  void shutdown('uncaught exception', 1);
});

/**
 * The stack ends with the process that started it (npm, a shell, a test): when that one is gone, even
 * killed with kill -9 (no signal reaches this process then), this process has a new parent, and it
 * stops as on SIGTERM. `npm start` execs node (package.json), so npm is the parent here and passes
 * its SIGINT and SIGTERM on; a shell between them would die of the signal without passing it on.
 */
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) void shutdown('parent process gone', 0, false);
}, 500).unref();

// The web console's one HTML page (GET /console), built from shared/console/web before the API serves it.
await buildConsole();
const bundled = process.argv.includes('--bundles') || process.env.TOCSIN_BUNDLES === '1';
if (bundled) console.log('bundling the functions as the CDK does (reused while no source changes) ...');
const bundles = await useBundles(bundled);
const dataDir = process.env.DATA_DIR || './.data';
starting = startLocalStack({
  port: Number(process.env.PORT ?? 3000),
  dataDir,
  // Where `npm run admin` finds this stack (default: .tocsin-local.json in the project root).
  stateFile: process.env.TOCSIN_STATE_FILE || undefined,
  // Where the claim links of its messages lead, when not to this stack itself (a proxy in front).
  publicBaseUrl: process.env.PUBLIC_BASE_URL || undefined,
});
stack = await starting.catch((err: unknown) => {
  // Nothing is left running (the start stops what it started when it fails).
  console.error(err);
  process.exit(1);
});

const persistence =
  dataDir === ':memory:'
    ? 'in memory (nothing is kept)'
    : `${dataDir} (table and queues${
        stack.released > 0
          ? `; the previous run did not stop cleanly: ${stack.released} message(s) its consumers held requeued`
          : ''
      })`;
// Ready, unless a signal came during the start (the stop is under way then).
if (stoppingSince === undefined) {
  console.log(`tocsin local stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s
  API             ${stack.url}   (try ${stack.url}/health)
  Console         ${stack.url}${(process.env.BASE_PATH ?? '').replace(/\/+$/, '')}/console   (sign in: an account whose password npm run admin -- user password UID set)
  DynamoDB Local  ${stack.dynamoEndpoint}   table ${stack.tableName}
  SQS emulator    ${stack.sqsEndpoint}   queues ${Object.keys(stack.queueUrls).join(', ')} (+ DLQs)
  data            ${persistence}
  test clock      GET/POST ${stack.url}/_local/clock
  functions       ${bundles ? `bundles ${bundles.dir} (${bundles.reused ? 'reused' : `built in ${(bundles.ms / 1000).toFixed(1)} s`})` : 'TypeScript sources (--bundles: the deployed bundles)'}
Press Ctrl-C to stop (twice to force).`);
}
