import { startLocalStack } from './stack.ts';

/** `npm start`: the whole service on this machine, no configuration. */
const started = Date.now();
const stack = await startLocalStack({
  port: Number(process.env.PORT ?? 3000),
  dataDir: process.env.DATA_DIR ?? './.data',
  // Where `npm run admin` finds this stack (default: .tocsin-local.json in the project root).
  stateFile: process.env.TOCSIN_STATE_FILE || undefined,
});

console.log(`tocsin local stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s
  API             ${stack.url}   (try ${stack.url}/health)
  DynamoDB Local  ${stack.dynamoEndpoint}   table ${stack.tableName}
  SQS emulator    ${stack.sqsEndpoint}   queues ${Object.keys(stack.queueUrls).join(', ')} (+ DLQs)
  data            ${process.env.DATA_DIR ?? './.data'}
  test clock      GET/POST ${stack.url}/_local/clock
Press Ctrl-C to stop.`);

let stopping = false;
const shutdown = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping ...`);
  await stack.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('uncaughtException', async (err) => {
  console.error('fatal:', err);
  await stack.stop();
  process.exit(1);
});
