import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { hmacSign, md5Sign } from '../shared/domain/auth/signature.ts';
import type { StackCpu } from '../shared/local/stack.ts';
import type { Stats } from '../shared/local/stats.ts';
import { type BenchStack, cpuSpent, type TaskRef } from './stack.ts';

/**
 * The open-loop load generator: signed reports fired on a fixed schedule whatever the answers, each
 * marked with the run and its sequence number in `ctn.hostname` (`b<run>-<seq>`), so that whatever
 * reaches a receiver (a webhook event, a robot message, an e-mail) names the report it came from.
 */

export const percentile = (sorted: number[], p: number) =>
  sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
    : NaN;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Something a report produced, as a receiver saw it: which report, for which target, when. */
export interface Arrival {
  seq: number;
  /** The recipient (an e-mail address), or '' where each report has one. */
  target: string;
  at: number;
  /** What the latency counts from, when not the report's sending (ms: due work's due time). */
  since?: number;
}

/** Where a run's reports arrive: a receiver's view, and how many targets each report reaches. */
export interface Channel {
  name: string;
  targets: number;
  arrivals(run: string): Arrival[];
}

/** `b<run>-<seq>` in any text (a message body, a JSON event). */
const MARK = /b([a-z0-9]{6})-(\d+)/;
export function markOf(text: string): { run: string; seq: number } | undefined {
  const m = MARK.exec(text);
  return m ? { run: m[1], seq: Number(m[2]) } : undefined;
}

export interface ChannelResult {
  name: string;
  /** Reports whose every target got it. */
  delivered: number;
  /** Targets of accepted reports that got nothing. */
  lost: number;
  duplicates: number;
  p50: number;
  p99: number;
  /** Arrivals per second while the load ran. */
  perSecond: number;
}

export interface RunResult {
  rate: number;
  seconds: number;
  sent: number;
  accepted: number;
  refused: number;
  /** Why, with how many each (an answer's code, or the connection error). */
  refusals: string;
  reportP50: number;
  reportP99: number;
  channels: ChannelResult[];
  maxDepth: number;
  endDepth: number;
  /** Alarms the figures per alarm divide by: those the first channel delivered in full. */
  delivered: number;
  /** CPU ms per alarm of the service's own process (the API, the consumers, the schedule). */
  serviceMs: number;
  /** CPU ms per alarm of DynamoDB Local's JVM, apart. */
  dynamodbMs: number;
  /** The SQS emulator's CPU per unit (beside the service's). */
  sqsMs: number;
  /** This process (the load generator and the receivers), not counted in the above. */
  clientMs: number;
  stats: Stats;
}

/**
 * The load generator's client: plain HTTP/1.1 over kept-alive connections, as an alarm sender with
 * a connection pool would send. (fetch cost this process about a millisecond of CPU per report, CPU
 * the stack under test then did not have.)
 */
const senders = new Agent({ keepAlive: true, maxSockets: 256 });

function postReport(url: string, body: string): Promise<{ code: number; data?: { uuid?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: senders,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('report timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

export interface LoadOptions {
  /** Extra content of report `i` (beside the run mark). */
  ctn?: (i: number) => Record<string, unknown>;
  /** Queues whose depth is sampled (default alarm and webhook). */
  queues?: string[];
  /** How long without progress ends the wait for arrivals (ms, default 30 s). */
  patienceMs?: number;
}

/** Reports fired at a fixed rate: what the stack accepted, when, and what it answered. */
export interface Fired {
  run: string;
  rate: number;
  sent: number;
  /** Accepted reports by sequence number: when each was sent (ms). */
  sentAt: Map<number, number>;
  /** Accepted reports by sequence number: the uuid the service gave each. */
  uuids: Map<number, string>;
  refused: number;
  refusals: string;
  reportLatency: number[];
  /** Seconds the firing took. */
  seconds: number;
}

/**
 * Fires `rate` reports per second for `seconds` at the tasks (round robin), each on its schedule
 * whatever earlier answers did; resolves once every report was answered.
 */
export async function fire(
  stack: BenchStack,
  tasks: TaskRef[],
  rate: number,
  seconds: number,
  ctn?: (i: number) => Record<string, unknown>,
): Promise<Fired> {
  const run = Math.random().toString(36).slice(2, 8).padEnd(6, '0');
  const total = Math.round(rate * seconds);
  const sentAt = new Map<number, number>();
  const uuids = new Map<number, string>();
  const reportLatency: number[] = [];
  const refusals = new Map<string, number>();
  let refused = 0;
  const refuse = (why: string) => {
    refused++;
    refusals.set(why, (refusals.get(why) ?? 0) + 1);
  };
  const t0 = performance.now();
  const wall0 = Date.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 1) await sleep(wait);
    const task = tasks[i % tasks.length];
    inflight.push(
      (async () => {
        const started = Date.now();
        const timestamp = Math.floor(started / 1000);
        const sign = (i % 2 ? md5Sign : hmacSign)(task.token, task.id, timestamp);
        const content = {
          hostname: `b${run}-${i}`,
          seq: i,
          msg: 'bench alarm',
          trace_id: 12345678901234567890n.toString(),
          ...ctn?.(i),
        };
        try {
          const body = await postReport(
            `${stack.url}/alarm/report`,
            JSON.stringify({ taskid: task.id, timestamp, sign, level: i % 4, ctn: content }),
          );
          reportLatency.push(Date.now() - started);
          if (body.code === 0 && body.data?.uuid) {
            sentAt.set(i, started);
            uuids.set(i, body.data.uuid);
          } else refuse(`code ${body.code}`);
        } catch (err) {
          refuse((err as NodeJS.ErrnoException).code ?? (err as Error).message);
        }
      })(),
    );
  }
  await Promise.all(inflight);
  reportLatency.sort((a, b) => a - b);
  return {
    run,
    rate,
    sent: total,
    sentAt,
    uuids,
    refused,
    refusals: [...refusals].map(([why, n]) => `${why} ${n}`).join(', '),
    reportLatency,
    seconds: (Date.now() - wall0) / 1000,
  };
}

/**
 * Waits until every target of every accepted report was reached on every channel, or nothing moved
 * for `patienceMs`.
 */
export async function arrived(channels: Channel[], f: Fired, patienceMs = 30_000): Promise<void> {
  const reached = () => channels.reduce((n, c) => n + new Set(keysOf(c.arrivals(f.run))).size, 0);
  const wanted = channels.reduce((n, c) => n + c.targets * f.sentAt.size, 0);
  let last = -1;
  let lastProgress = Date.now();
  for (;;) {
    const got = reached();
    if (got >= wanted) return;
    if (got !== last) {
      last = got;
      lastProgress = Date.now();
    }
    if (Date.now() - lastProgress > patienceMs) return;
    await sleep(50);
  }
}

/**
 * An open-loop run: fires the reports (`fire`), waits for what they produce on every channel
 * (`arrived`), and measures it with the stack's calls and CPU over the whole run.
 */
export async function openLoop(
  stack: BenchStack,
  tasks: TaskRef[],
  channels: Channel[],
  rate: number,
  seconds: number,
  opts: LoadOptions = {},
): Promise<RunResult> {
  await stack.stats(true);
  const self0 = process.cpuUsage();
  const cpu0 = stack.cpu();
  let maxDepth = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      maxDepth = Math.max(maxDepth, await stack.queueDepth(opts.queues).catch(() => 0));
      await sleep(500);
    }
  })();
  const f = await fire(stack, tasks, rate, seconds, opts.ctn);
  const duringLoad = channels.map((c) => c.arrivals(f.run).length);
  await arrived(channels, f, opts.patienceMs);
  const spent = cpuSpent(cpu0, stack.cpu());
  const selfUsage = process.cpuUsage(self0);
  await sleep(1000); // late duplicates
  sampling = false;
  await sampler;
  const results = channels.map((c, i) => measure(c, c.arrivals(f.run), f.sentAt, duringLoad[i] / f.seconds));
  return resultOf(f, results, {
    maxDepth,
    endDepth: await stack.queueDepth(opts.queues),
    stats: await stack.stats(),
    spent,
    clientSeconds: (selfUsage.user + selfUsage.system) / 1e6,
  });
}

/** A run's figures from what was fired, what arrived and what the stack spent meanwhile. */
export function resultOf(
  f: Fired,
  channels: ChannelResult[],
  m: { maxDepth: number; endDepth: number; stats: Stats; spent: StackCpu; clientSeconds: number },
  units = channels[0]?.delivered ?? 0,
): RunResult {
  const per = (seconds: number) => (units ? (seconds * 1000) / units : NaN);
  return {
    rate: f.rate,
    seconds: f.seconds,
    sent: f.sent,
    accepted: f.sentAt.size,
    refused: f.refused,
    refusals: f.refusals,
    reportP50: percentile(f.reportLatency, 50),
    reportP99: percentile(f.reportLatency, 99),
    channels,
    maxDepth: m.maxDepth,
    endDepth: m.endDepth,
    delivered: units,
    serviceMs: per(m.spent.service),
    dynamodbMs: per(m.spent.emulators.dynamodb),
    sqsMs: per(m.spent.emulators.sqs),
    clientMs: per(m.clientSeconds),
    stats: m.stats,
  };
}

const keysOf = (arrivals: Arrival[]) => arrivals.map((a) => `${a.seq}/${a.target}`);

/** One channel's figures: each target's first arrival against its report's sending (or its `since`). */
export function measure(c: Channel, arrivals: Arrival[], sentAt: Map<number, number>, perSecond: number) {
  const first = new Map<string, number>();
  let duplicates = 0;
  for (const a of arrivals) {
    if (!sentAt.has(a.seq)) continue;
    const key = `${a.seq}/${a.target}`;
    if (first.has(key)) duplicates++;
    else first.set(key, a.at - (a.since ?? (sentAt.get(a.seq) as number)));
  }
  const perReport = new Map<number, number>();
  const latency: number[] = [];
  for (const [key, ms] of first) {
    const seq = Number(key.slice(0, key.indexOf('/')));
    perReport.set(seq, (perReport.get(seq) ?? 0) + 1);
    latency.push(ms);
  }
  latency.sort((a, b) => a - b);
  const result: ChannelResult = {
    name: c.name,
    delivered: [...perReport.values()].filter((n) => n >= c.targets).length,
    lost: sentAt.size * c.targets - first.size,
    duplicates,
    p50: percentile(latency, 50),
    p99: percentile(latency, 99),
    perSecond,
  };
  return result;
}
