/**
 * `npm run bench:ingest` — the alarm path end to end on the local stack, in this process:
 * POST /alarm/report (signed like a real client) -> alarm queue -> pipeline -> webhook queue ->
 * delivery to a real HTTP receiver on 127.0.0.1.
 *
 * Prints, per mode: accepted alarms/s, p50/p99 report latency, p50/p99 report -> webhook received,
 * webhook events received vs expected (lost, duplicates), and the DynamoDB capacity units consumed
 * per alarm (every DynamoDB call of the process asks for ReturnConsumedCapacity TOTAL). Exits 0 only
 * when no event was lost.
 *
 * Modes: `plain` (compression off: one stored record and one ALARM event per alarm) and `compressed`
 * (full method, count-cycle with N = 1: every alarm goes through the task's single metric state item
 * in a transaction and is notified, the hottest item the pipeline has).
 *
 * Options (flags or env): --alarms N (BENCH_ALARMS, default 5000), --concurrency C
 * (BENCH_CONCURRENCY, 32), --pollers P (BENCH_POLLERS, 4), --mode plain|compressed|both
 * (BENCH_MODE, both), --timeout S (BENCH_TIMEOUT, 300: seconds to wait for the webhooks).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { nowSeconds } from '../shared/clock.ts';
import { hmacSign, md5Sign } from '../shared/domain/auth/signature.ts';
import { type Received, TestReceiver } from '../test/support/receiver.ts';

// Quiet handlers unless asked otherwise; set before the modules that create the logger load.
process.env.LOG_LEVEL ??= 'ERROR';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { db } = await import('../shared/db/client.ts');
const { startLocalStack } = await import('../shared/local/stack.ts');
const { seedTestDirectory, TEST_APP } = await import('../test/support/seed.ts');

type Mode = 'plain' | 'compressed';

const { values: args } = parseArgs({
  options: {
    alarms: { type: 'string' },
    concurrency: { type: 'string' },
    pollers: { type: 'string' },
    mode: { type: 'string' },
    timeout: { type: 'string' },
  },
});

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}

const N = positive('alarms', args.alarms ?? process.env.BENCH_ALARMS, 5000);
const C = positive('concurrency', args.concurrency ?? process.env.BENCH_CONCURRENCY, 32);
const POLLERS = positive('pollers', args.pollers ?? process.env.BENCH_POLLERS, 4);
const TIMEOUT_S = positive('timeout', args.timeout ?? process.env.BENCH_TIMEOUT, 300);
const MODE_ARG = args.mode ?? process.env.BENCH_MODE ?? 'both';
if (!['plain', 'compressed', 'both'].includes(MODE_ARG))
  throw new Error('mode must be plain, compressed or both');
const MODES: Mode[] = MODE_ARG === 'both' ? ['plain', 'compressed'] : [MODE_ARG as Mode];

// ---- DynamoDB capacity accounting -----------------------------------------------------------

const READS = new Set([
  'GetItemCommand',
  'QueryCommand',
  'BatchGetItemCommand',
  'TransactGetItemsCommand',
  'ScanCommand',
]);

/** Approximate stored size of an item or value (attribute names + values), bytes. */
const sizeOf = (v: unknown) => Buffer.byteLength(JSON.stringify(v ?? {}), 'utf8');

/**
 * DynamoDB Local under-reports transactions (about 2 units per call whatever it holds), so a
 * TransactWriteItems is charged here by the AWS rule: 2 WCU per item per started KB.
 */
function transactionUnits(input: Record<string, unknown>): number {
  const items = (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[];
  let units = 0;
  for (const t of items) {
    const op = Object.values(t)[0] ?? {};
    const bytes = op.Item ? sizeOf(op.Item) : sizeOf(op.Key) + sizeOf(op.ExpressionAttributeValues);
    units += 2 * Math.max(1, Math.ceil(bytes / 1024));
  }
  return units;
}

interface Capacity {
  read: number;
  write: number;
  calls: number;
  /** Calls that came back without ConsumedCapacity. */
  unreported: number;
  byKind: Map<string, { calls: number; units: number }>;
}

const capacity: Capacity = { read: 0, write: 0, calls: 0, unreported: 0, byKind: new Map() };
const resetCapacity = () => {
  capacity.read = 0;
  capacity.write = 0;
  capacity.calls = 0;
  capacity.unreported = 0;
  capacity.byKind.clear();
};

/** What a call is about: the command and the entity prefix of its (first) key. */
function kindOf(command: string, input: Record<string, unknown>): string {
  const firstPk = (): string | undefined => {
    const key = (input.Key ?? input.Item) as { pk?: string } | undefined;
    if (key?.pk) return key.pk;
    const values = input.ExpressionAttributeValues as Record<string, unknown> | undefined;
    if (typeof values?.[':pk'] === 'string') return values[':pk'] as string;
    const tx = input.TransactItems as
      | Record<string, { Key?: { pk?: string }; Item?: { pk?: string } }>[]
      | undefined;
    if (tx?.[0]) {
      const op = Object.values(tx[0])[0];
      return op?.Key?.pk ?? op?.Item?.pk;
    }
    const batch = input.RequestItems as Record<string, unknown[]> | undefined;
    if (batch) {
      const first = Object.values(batch)[0] as unknown;
      const entry = Array.isArray(first) ? first[0] : (first as { Keys?: { pk?: string }[] })?.Keys?.[0];
      const e = entry as { PutRequest?: { Item?: { pk?: string } }; pk?: string } | undefined;
      return e?.PutRequest?.Item?.pk ?? e?.pk;
    }
    return undefined;
  };
  const pk = firstPk();
  return `${command.replace('Command', '')} ${pk ? pk.split('#')[0] : '?'}`;
}

function installCapacityMiddleware() {
  db().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const command = String((context as { commandName?: string }).commandName ?? 'Unknown');
      const consumed = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      const list = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) as {
        CapacityUnits?: number;
        ReadCapacityUnits?: number;
        WriteCapacityUnits?: number;
      }[];
      capacity.calls++;
      if (list.length === 0) capacity.unreported++;
      let units = 0;
      for (const c of list)
        units += c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0);
      if (command === 'TransactWriteItemsCommand') units = transactionUnits(input);
      if (READS.has(command)) capacity.read += units;
      else capacity.write += units;
      const kind = kindOf(command, input);
      const k = capacity.byKind.get(kind) ?? { calls: 0, units: 0 };
      k.calls++;
      k.units += units;
      capacity.byKind.set(kind, k);
      return out;
    },
    { step: 'initialize', name: 'benchConsumedCapacity' },
  );
}

// ---- Helpers ---------------------------------------------------------------------------------

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(1)} ms` : 'n/a');

async function api<T>(baseUrl: string, method: string, path: string, body: unknown): Promise<T> {
  const ts = nowSeconds();
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      'x-app-id': String(TEST_APP.id),
      'x-app-timestamp': String(ts),
      'x-app-sign': hmacSign(TEST_APP.token, TEST_APP.id, ts),
    },
    body: JSON.stringify(body),
  });
  const env = (await res.json()) as { code: number; msg: string; data: T };
  if (env.code !== 0) throw new Error(`${method} ${path}: ${env.code} ${env.msg}`);
  return env.data;
}

interface TaskRef {
  id: number;
  token: string;
}

async function createBenchTask(baseUrl: string, mode: Mode, webhook: string): Promise<TaskRef> {
  const compress =
    mode === 'compressed'
      ? { enable: true, method: 4, strategy: 4, strategy_cycle: 60, strategy_count: 1, not_match: 1 }
      : undefined;
  const data = await api<{ task: { id: number; token: string } }>(baseUrl, 'POST', '/alarmtask/store', {
    name: `bench-${mode}-${randomUUID().slice(0, 8)}`,
    created_by: 1,
    department_id: 1,
    flag_save_db: 1,
    receiver: { channels: { email: [1], webhook } },
    ...(compress ? { compress } : {}),
  });
  return { id: data.task.id, token: data.task.token };
}

interface ReportOutcome {
  /** The uuid the service answered (empty when refused or failed). */
  uuid: string;
  startedAt: number;
  latencyMs: number;
  ok: boolean;
  code?: number;
  retries: number;
}

/**
 * One alarm report, signed like the existing clients (legacy MD5 and HMAC, alternating), without a
 * client uuid (as those clients send it). A timed-out report is retried; if the first attempt had
 * been accepted after all, its alarm shows up as an unexpected extra event.
 */
async function reportOne(baseUrl: string, task: TaskRef, i: number): Promise<ReportOutcome> {
  const startedAt = performance.now();
  let retries = 0;
  for (;;) {
    const timestamp = nowSeconds();
    const sign = (i % 2 ? md5Sign : hmacSign)(task.token, task.id, timestamp);
    try {
      const res = await fetch(`${baseUrl}/alarm/report`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          taskid: task.id,
          timestamp,
          sign,
          level: i % 4,
          ctn: { hostname: `web-${i % 50}`, seq: i, msg: 'bench alarm' },
        }),
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await res.json()) as { code: number; data?: { uuid?: string } };
      const ok = body.code === 0 && typeof body.data?.uuid === 'string';
      return {
        uuid: ok ? (body.data?.uuid as string) : '',
        startedAt,
        latencyMs: performance.now() - startedAt,
        ok,
        code: body.code,
        retries,
      };
    } catch (err) {
      if (++retries > 3) {
        console.error(`report ${i} failed: ${(err as Error).message}`);
        return { uuid: '', startedAt, latencyMs: performance.now() - startedAt, ok: false, retries };
      }
    }
  }
}

interface ModeResult {
  mode: Mode;
  lost: number;
}

async function runMode(baseUrl: string, mode: Mode, receiver: TestReceiver): Promise<ModeResult> {
  const task = await createBenchTask(baseUrl, mode, receiver.url);
  // Let the PING of the new task go out before measuring.
  await receiver.waitFor((all) => all.some((r) => r.json?.event === 'PING'), 10_000).catch(() => undefined);
  receiver.received.length = 0;
  resetCapacity();

  const outcomes: ReportOutcome[] = new Array(N);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(C, N) }, async () => {
      for (let i = next++; i < N; i = next++) outcomes[i] = await reportOne(baseUrl, task, i);
    }),
  );
  const reportSeconds = (performance.now() - started) / 1000;
  const accepted = outcomes.filter((o) => o.ok);
  const refused = outcomes.length - accepted.length;

  // Wait for every accepted alarm's ALARM event (or no progress for the timeout).
  const byUuid = new Map(accepted.map((o) => [o.uuid, o]));
  const alarmEvents = (): Received[] =>
    receiver.received.filter((r) => r.json?.event === 'ALARM' && r.json?.data?.task?.id === task.id);
  const deadline = Date.now() + TIMEOUT_S * 1000;
  let lastCount = -1;
  let lastProgress = Date.now();
  for (;;) {
    const distinct = new Set(alarmEvents().map((r) => r.json.data.history?.uuid as string)).size;
    if (distinct >= accepted.length) break;
    if (distinct !== lastCount) {
      lastCount = distinct;
      lastProgress = Date.now();
    }
    if (Date.now() > deadline || Date.now() - lastProgress > 60_000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const drainSeconds = (performance.now() - started) / 1000;
  // Let late duplicates (retried timeouts) show up before counting them.
  await new Promise((r) => setTimeout(r, 1000));

  const events = alarmEvents();
  const firstArrival = new Map<string, number>();
  const perfOffset = Date.now() - performance.now();
  let foreign = 0;
  for (const e of events) {
    const uuid = e.json.data.history?.uuid as string;
    if (!byUuid.has(uuid)) {
      foreign++;
      continue;
    }
    if (!firstArrival.has(uuid)) firstArrival.set(uuid, e.at - perfOffset);
  }
  const duplicates = events.length - foreign - firstArrival.size;
  const lost = accepted.length - firstArrival.size;
  const reportLat = outcomes.map((o) => o.latencyMs).sort((a, b) => a - b);
  const e2e = [...firstArrival]
    .map(([uuid, at]) => at - (byUuid.get(uuid) as ReportOutcome).startedAt)
    .sort((a, b) => a - b);
  const retries = outcomes.reduce((s, o) => s + o.retries, 0);

  console.log(`\n== mode ${mode}: ${N} alarms, concurrency ${C}, ${POLLERS} pollers per queue ==`);
  console.log(`accepted             ${accepted.length} (${refused} refused, ${retries} client retries)`);
  console.log(
    `accepted alarms/s    ${(accepted.length / reportSeconds).toFixed(1)}  (report phase ${reportSeconds.toFixed(2)} s)`,
  );
  console.log(
    `report latency       p50 ${ms(percentile(reportLat, 50))}  p99 ${ms(percentile(reportLat, 99))}`,
  );
  console.log(
    `report -> webhook    p50 ${ms(percentile(e2e, 50))}  p99 ${ms(percentile(e2e, 99))}  (all delivered after ${drainSeconds.toFixed(2)} s)`,
  );
  console.log(
    `webhook events       received ${firstArrival.size} of ${accepted.length} expected; lost ${lost}; duplicates ${duplicates}${foreign ? `; unexpected ${foreign}` : ''}`,
  );
  const perAlarm = (u: number) => (accepted.length ? (u / accepted.length).toFixed(2) : 'n/a');
  console.log(
    `DynamoDB per alarm   ${perAlarm(capacity.write)} WCU, ${perAlarm(capacity.read)} RCU  (${capacity.calls} calls${capacity.unreported ? `, ${capacity.unreported} without ConsumedCapacity` : ''})`,
  );
  const kinds = [...capacity.byKind].sort((a, b) => b[1].units - a[1].units);
  for (const [kind, k] of kinds) {
    console.log(
      `  ${kind.padEnd(30)} ${String(k.calls).padStart(7)} calls  ${perAlarm(k.units).padStart(6)} CU/alarm`,
    );
  }
  return { mode, lost };
}

// ---- Main ------------------------------------------------------------------------------------

const stack = await startLocalStack({
  port: 0,
  dataDir: ':memory:',
  stateFile: false,
  schedule: false,
  pollers: POLLERS,
  env: {
    LOG_LEVEL: process.env.LOG_LEVEL,
    ALARM_RATE_LIMIT: '1000000',
    WEBHOOK_BACKOFF_SECONDS: '1,1,1,1,1,1',
    NOTIFY_BACKOFF_SECONDS: '1,1,1,1,1,1',
  },
});
const receiver = new TestReceiver();
let stopping = false;
const stopAll = async () => {
  if (stopping) return;
  stopping = true;
  await receiver.stop().catch(() => undefined);
  await stack.stop();
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await stopAll();
    process.exit(130);
  });
}

let exitCode = 1;
try {
  await receiver.start();
  await seedTestDirectory();
  installCapacityMiddleware();
  console.log(`local stack ${stack.url}; webhook receiver ${receiver.url}`);
  const results: ModeResult[] = [];
  for (const mode of MODES) results.push(await runMode(stack.url, mode, receiver));
  const lost = results.reduce((s, r) => s + r.lost, 0);
  console.log(lost === 0 ? '\nOK: no webhook event lost' : `\nFAILED: ${lost} webhook event(s) lost`);
  exitCode = lost === 0 ? 0 : 1;
} catch (err) {
  console.error('benchmark failed:', err);
} finally {
  await stopAll();
}
process.exit(exitCode);
