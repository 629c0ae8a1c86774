import { parentPort, workerData } from 'node:worker_threads';
import { queues } from '../../infra/consumers.ts';
import { recordCalls } from './call-record.ts';
import { shareClock } from '../clock.ts';
import { logger } from '../log.ts';
import { chaosFromEnv } from './chaos.ts';
import { localSqsClient } from './queues.ts';
import { type PollerScale, startPoller } from './poller.ts';
import { useLocalPlatform } from './platform.ts';
import { countSqsCalls, takeStats } from './stats.ts';
import { installTerminalLog } from './terminal-log.ts';

/**
 * One consumer "container" of the local stack (a worker thread, as a Lambda function has its own
 * containers): the poller of one queue with the consumer handler, its own module state (caches,
 * clients) and the stack's shared clock. Messages: `stats` (answers this thread's counts), `stop`
 * (lets the batches in flight finish, then answers `stopped`).
 */
export interface ConsumerWorkerData {
  queue: string;
  url: string;
  endpoint: string;
  region: string;
  scale: PollerScale;
  clock: SharedArrayBuffer;
}

const data = workerData as ConsumerWorkerData;
const port = parentPort;
if (!port) throw new Error('consumer-worker.ts runs as a worker thread');
useLocalPlatform();
shareClock(data.clock);
installTerminalLog();
const def = queues.find((q) => q.name === data.queue);
if (!def) throw new Error(`unknown queue ${data.queue}`);
// The event source mapping polls with the consumer's role: its calls are the consumer's.
const client = recordCalls(localSqsClient(data.endpoint, data.region), `queue:${def.name}`);
countSqsCalls(client);
// SQS_CHAOS=1: the queue at its worst (chaos.ts), its seed printed so that a run can be repeated.
const chaos = chaosFromEnv();
const chaosClient = localSqsClient(data.endpoint, data.region);
if (chaos)
  process.stderr.write(
    `tocsin: SQS chaos on the ${def.name} queue (SQS_CHAOS_SEED=${chaos.seed}, ` +
      `at most ${chaos.inFlightLimit} in flight)\n`,
  );
const poller = startPoller(
  client,
  def,
  data.url,
  data.region,
  { ...data.scale, windowMs: def.gather ? data.scale.windowMs : 0 },
  chaos ? { options: chaos, client: chaosClient } : undefined,
);

port.on('message', async (m: { type: string; reset?: boolean }) => {
  if (m.type === 'stats') port.postMessage({ type: 'stats', stats: takeStats(m.reset) });
  if (m.type === 'stop') {
    await poller.stop().catch((err) => logger.error('consumer stop failed', { error: err as Error }));
    client.destroy();
    chaosClient.destroy();
    port.postMessage({ type: 'stopped' });
    // End the thread normally (profilers and the like write their output on a normal exit).
    setImmediate(() => process.exit(0));
  }
});
port.postMessage({ type: 'ready' });
