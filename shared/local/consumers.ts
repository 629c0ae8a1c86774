import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { queues } from '../../infra/consumers.ts';
import { logger } from '../log.ts';
import type { ConsumerWorkerData } from './consumer-worker.ts';
import type { PollerScale } from './poller.ts';
import type { Stats } from './stats.ts';

/**
 * The queue consumers of the local stack, each queue's in a worker thread of its own: like the
 * Lambda functions they stand for, each has its own "container" (module state, caches, clients), and
 * together they use the machine's cores while the API thread serves requests. A consumer that dies
 * is started again.
 */
export interface Consumers {
  /** Each consumer thread's counts (TOCSIN_STATS=1). */
  stats(reset: boolean): Promise<Stats[]>;
  /** Stops receiving and lets the batches in flight finish. */
  stop(): Promise<void>;
}

const WORKER = new URL('./consumer-worker.ts', import.meta.url);

export async function startConsumers(o: {
  endpoint: string;
  urls: Record<string, string>;
  region: string;
  clock: SharedArrayBuffer;
  scale: PollerScale;
  /** Queues whose consumer runs a fixed number of batches at once (see LocalStackOptions.concurrency). */
  concurrency?: Partial<Record<string, number>>;
}): Promise<Consumers> {
  let stopping = false;
  const workers = new Map<string, Worker>();
  const start = async (queue: string): Promise<Worker> => {
    const fixed = o.concurrency?.[queue];
    const data: ConsumerWorkerData = {
      queue,
      url: o.urls[queue],
      endpoint: o.endpoint,
      region: o.region,
      scale: fixed ? { ...o.scale, min: fixed, max: fixed } : o.scale,
      clock: o.clock,
    };
    // The worker loads TypeScript like the main thread does, whatever process started the stack
    // (profiling options of the stack's process carry over).
    const profiling = process.execArgv.filter(
      (a) => a.startsWith('--cpu-prof') || a.startsWith('--heap-prof'),
    );
    const worker = new Worker(WORKER, { workerData: data, execArgv: [...profiling, '--import', 'tsx'] });
    worker.on('error', (err) => logger.error('local consumer thread failed', { queue, error: err }));
    worker.once('exit', (code) => {
      if (stopping || workers.get(queue) !== worker) return;
      logger.error('local consumer thread exited; starting it again', { queue, code });
      setTimeout(() => void start(queue).catch(() => undefined), 1000).unref();
    });
    const [ready] = (await once(worker, 'message')) as [{ type: string }];
    if (ready.type !== 'ready') throw new Error(`consumer ${queue} did not start`);
    workers.set(queue, worker);
    return worker;
  };
  await Promise.all(queues.map((q) => start(q.name)));

  const ask = async <T>(worker: Worker, type: string, reply: string, extra = {}): Promise<T> => {
    const answer = new Promise<T>((resolve) => {
      const on = (m: { type: string } & T) => {
        if (m.type !== reply) return;
        worker.off('message', on);
        resolve(m);
      };
      worker.on('message', on);
    });
    worker.postMessage({ type, ...extra });
    return answer;
  };
  return {
    async stats(reset) {
      const all = await Promise.all(
        [...workers.values()].map((w) => ask<{ stats: Stats }>(w, 'stats', 'stats', { reset })),
      );
      return all.map((a) => a.stats);
    },
    async stop() {
      stopping = true;
      await Promise.all(
        [...workers.values()].map(async (w) => {
          const exited = once(w, 'exit');
          await ask(w, 'stop', 'stopped');
          await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())]);
          await w.terminate();
        }),
      );
    },
  };
}
