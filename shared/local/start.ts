import { buildConsole } from '../../scripts/build-console.ts';
import { reapJvm } from './java.ts';
import { startLocalStack } from './stack.ts';

/** `npm start`: the whole service on this machine, no configuration. */
const started = Date.now();
// The web console's one HTML page (GET /console), built from shared/console/web before the API serves it.
await buildConsole();
const dataDir = process.env.DATA_DIR || './.data';
const stack = await startLocalStack({
  port: Number(process.env.PORT ?? 3000),
  dataDir,
  // Where `npm run admin` finds this stack (default: .tocsin-local.json in the project root).
  stateFile: process.env.TOCSIN_STATE_FILE || undefined,
});

const persistence =
  dataDir === ':memory:'
    ? 'in memory (nothing is kept)'
    : `${dataDir} (table and queues; ${stack.released} message(s) left in flight by the previous run requeued)`;
console.log(`tocsin local stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s
  API             ${stack.url}   (try ${stack.url}/health)
  Console         ${stack.url}${(process.env.BASE_PATH ?? '').replace(/\/+$/, '')}/console   (sign in: an account whose password npm run admin -- user password UID set)
  DynamoDB Local  ${stack.dynamoEndpoint}   table ${stack.tableName}
  SQS emulator    ${stack.sqsEndpoint}   queues ${Object.keys(stack.queueUrls).join(', ')} (+ DLQs)
  data            ${persistence}
  test clock      GET/POST ${stack.url}/_local/clock
Press Ctrl-C to stop (twice to force).`);

let stopping = false;
/**
 * The first signal stops in an order that loses nothing (stack.stop()); a second one exits at once
 * (the queues and the table are durable, so even that loses only what was in flight, which the next
 * start picks up again).
 */
const shutdown = async (signal: string, code = 0) => {
  if (stopping) {
    console.log(`${signal} again: exiting now`);
    reapJvm(stack.javaPid);
    process.exit(130);
  }
  stopping = true;
  console.log(`\n${signal}: stopping ...`);
  await stack.stop((stage, detail) => {
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
