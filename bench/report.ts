import { readFileSync } from 'node:fs';
import { MEMORY_MB } from '../infra/constructs/service-functions.ts';
import { routes } from '../infra/definitions.ts';
import type { Stats } from '../shared/local/stats.ts';
import type { RunResult } from './load.ts';

/**
 * What a run costs and how the benchmark reports it: the targets (PASS / FAIL), notes beside them and
 * every run's details. Costs are the stack's counted calls at AWS's prices.
 */

export const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export interface Account {
  ddbCallsPerAlarm: number;
  /** Table writes: items written (put, updated, inserted), whatever their size. */
  itemsPerAlarm: number;
  /** Write calls (a batch write is one call). */
  writeCallsPerAlarm: number;
  wcuPerAlarm: number;
  rcuPerAlarm: number;
  sqsCallsPerAlarm: number;
  invocationsPerAlarm: number;
  costPerMillion: number;
  costLines: string[];
}

/** Prices (us-east-1, on-demand, arm64), USD. */
const PRICE = {
  apiPerMillion: 1.0,
  lambdaPerMillion: 0.2,
  lambdaGbSecond: 0.0000133334,
  sqsPerMillion: 0.4,
  wruPerMillion: 0.625,
  rruPerMillion: 0.125,
};

function memoryMbOf(fn: string): number {
  const route = routes.find((r) => `${r.method} ${r.path}` === fn);
  if (route) return route.path.startsWith('/alarm/') ? MEMORY_MB.ingest : MEMORY_MB.http;
  return MEMORY_MB.consumer;
}

/** What `units` alarms (or due items) cost, from the stack's counts. */
export function account(s: Stats, units: number): Account {
  const per = (n: number) => n / units;
  const ddb = Object.values(s.dynamodb);
  const apiRequests = sum(
    Object.entries(s.invocations)
      .filter(([k]) => k.startsWith('POST ') || k.startsWith('GET ') || k.startsWith('PUT '))
      .map(([, v]) => v.count),
  );
  const invocations = sum(Object.values(s.invocations).map((v) => v.count));
  const gbSeconds = sum(
    Object.entries(s.invocations).map(([k, v]) => (v.ms / 1000) * (memoryMbOf(k) / 1024)),
  );
  // As on AWS: a report handler's container sends its message in a request of its own (the local API
  // thread shares SendMessageBatch requests between the reports it serves at once).
  const sqsCalls = sum(Object.values(s.sqs).map((v) => v.calls)) - s.enqueued.requests + s.enqueued.messages;
  const cost = {
    api: per(apiRequests) * PRICE.apiPerMillion,
    lambdaRequests: per(invocations) * PRICE.lambdaPerMillion,
    lambdaCompute: per(gbSeconds) * PRICE.lambdaGbSecond * 1e6,
    sqs: per(sqsCalls) * PRICE.sqsPerMillion,
    dynamodbWrites: per(sum(ddb.map((c) => c.write))) * PRICE.wruPerMillion,
    dynamodbReads: per(sum(ddb.map((c) => c.read))) * PRICE.rruPerMillion,
  };
  return {
    ddbCallsPerAlarm: per(sum(ddb.map((c) => c.calls))),
    itemsPerAlarm: per(sum(ddb.map((c) => c.items))),
    writeCallsPerAlarm: per(
      sum(
        Object.entries(s.dynamodb)
          .filter(([k]) => !/^(Get|Query|BatchGet)/.test(k))
          .map(([, v]) => v.calls),
      ),
    ),
    wcuPerAlarm: per(sum(ddb.map((c) => c.write))),
    rcuPerAlarm: per(sum(ddb.map((c) => c.read))),
    sqsCallsPerAlarm: per(sqsCalls),
    invocationsPerAlarm: per(invocations),
    costPerMillion: sum(Object.values(cost)),
    costLines: Object.entries(cost).map(([k, v]) => `${k} $${v.toFixed(3)}`),
  };
}

interface Target {
  name: string;
  value: string;
  pass: boolean;
}
const targets: Target[] = [];
const details: string[] = [];
/** Figures beside the targets that are not targets themselves. */
const notes: string[] = [];

export const target = (name: string, value: string, pass: boolean) => targets.push({ name, value, pass });
export const note = (text: string) => notes.push(text);
export const detail = (...lines: string[]) => details.push(...lines);

/** Table writes are items written (the first design wrote record, claim, attempt, release: 4). */
export const writesOf = (a: Account) =>
  `${fmt(a.itemsPerAlarm, 2)} items written (${fmt(a.wcuPerAlarm, 2)} WCU) in ${fmt(a.writeCallsPerAlarm, 2)} write calls`;

/** CPU of a run per alarm: the service's own process, the emulators beside it. */
export const cpuOf = (r: RunResult) =>
  `${fmt(r.serviceMs, 2)} ms service (beside it: DynamoDB Local ${fmt(r.dynamodbMs, 2)} ms, the SQS emulator ${fmt(r.sqsMs, 2)} ms)`;

export function describeRun(label: string, r: RunResult, a?: Account, unit = 'alarm') {
  detail(
    `${label}: ${r.rate}/s for ${fmt(r.seconds)} s: accepted ${r.accepted}/${r.sent} (refused ${r.refused}${r.refusals ? `: ${r.refusals}` : ''})`,
    ...r.channels.map(
      (c) =>
        `  ${c.name}: delivered ${c.delivered}, lost ${c.lost}, duplicates ${c.duplicates}; report->${c.name} p50/p99 ${fmt(c.p50)}/${fmt(c.p99)} ms; received ${fmt(c.perSecond)}/s`,
    ),
    `  report p50/p99 ${fmt(r.reportP50)}/${fmt(r.reportP99)} ms; queue depth max ${r.maxDepth}, end ${r.endDepth}; CPU per ${unit} ${cpuOf(r)}; load generator and receivers ${fmt(r.clientMs, 2)} ms`,
  );
  if (a) describeCost(a, r.stats, r.delivered, unit);
}

/** The calls and the AWS cost per unit of work. */
export function describeCost(a: Account, s: Stats, units: number, unit = 'alarm') {
  detail(
    `  per ${unit}: ${fmt(a.ddbCallsPerAlarm, 2)} DynamoDB calls (${fmt(a.itemsPerAlarm, 2)} items written, ${fmt(a.wcuPerAlarm, 2)} WCU, ${fmt(a.rcuPerAlarm, 2)} RCU), ${fmt(a.sqsCallsPerAlarm, 2)} SQS calls as on AWS (a report's message in a request of its own; ${fmt(s.enqueued.requests / units, 2)} shared requests here, ${fmt((s.sqsInThread ?? 0) / units, 2)} answered in the emulator's thread), ${fmt(a.invocationsPerAlarm, 2)} Lambda invocations`,
    `  DynamoDB: ${Object.entries(s.dynamodb)
      .map(([k, v]) => `${k} ${fmt(v.calls / units, 2)} (${fmt(v.units / units, 2)} CU)`)
      .join(', ')}`,
    `  SQS: ${Object.entries(s.sqs)
      .map(([k, v]) => `${k.replace('Command', '')} ${fmt(v.calls / units, 2)}`)
      .join(', ')}`,
    `  AWS cost per 1M ${unit}s $${fmt(a.costPerMillion, 2)} (${a.costLines.join(', ')})`,
  );
}

/** Prints the targets, the notes and the details; the exit code says whether every target passed. */
export function printReport(): void {
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`\n== targets (machine load average at the end: ${load}) ==`);
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.value}`);
  for (const n of notes) console.log(`note  ${n}`);
  console.log('\n== details ==');
  for (const d of details) console.log(d);
  process.exitCode = targets.every((t) => t.pass) ? 0 : 1;
}
