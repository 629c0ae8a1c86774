/**
 * `npm run bench:coldstart` — the cold import of every Lambda bundle, measured against the
 * cold-start budget: no HTTP function's cold import may take more than 1.5x that of the reference
 * function, GET /user/profile: the smallest function that reads the table, so it carries what every
 * such function carries (the DynamoDB client, Powertools, the tracer) and little of its own. The
 * budget bounds what a route adds beyond that. (GET /health was the reference while every function
 * carried every route; it now carries neither the SDK nor the tracer, and its figure is printed
 * beside, for what the shared runtime costs.)
 *
 * Every deployed entry (the routes of definitions.ts, the `$default` 404 handler, the queue
 * consumers and the scheduled runner) is bundled as the CDK bundles it (infra/bundles.ts: the
 * esbuild settings of LAMBDA_BUNDLING, in one esbuild run). Each sample is a fresh node process that
 * imports the bundle once, with the environment the functions get in AWS (NODE_OPTIONS included);
 * samples of the bundles are interleaved so that a machine's slow moment does not land on one bundle.
 *
 * The table shows each bundle's size, what of it is ajv and pinyin-pro (from esbuild's metafile),
 * the median import time and its ratios to /health and to the reference. Exit code 1 when an HTTP
 * function is over budget. Options: --samples N (per bundle, default 15), --only SUBSTRING (entries
 * whose path contains it; /health and the reference are always measured), --keep (leave the bundles
 * in the temporary directory).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Metafile } from 'esbuild';
import { buildBundles, type DeployedEntry, deployedEntries } from '../infra/bundles.ts';

const { values: args } = parseArgs({
  options: {
    samples: { type: 'string' },
    only: { type: 'string' },
    keep: { type: 'boolean' },
  },
});
const SAMPLES = Number(args.samples ?? 15);
const BUDGET = 1.5;
const HEALTH = 'functions/http/health/get-health.ts';
const REFERENCE = 'functions/http/user/show-profile.ts';

function entries(): DeployedEntry[] {
  return deployedEntries().filter(
    (e) => e.entry === HEALTH || e.entry === REFERENCE || !args.only || e.entry.includes(args.only),
  );
}

/** The environment every function gets in AWS (ServiceFunctions), with placeholder resource names. */
const LAMBDA_ENV: Record<string, string> = {
  AWS_REGION: 'us-east-1',
  AWS_LAMBDA_FUNCTION_NAME: 'tocsin-coldstart',
  TABLE_NAME: 'tocsin',
  ALARM_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/tocsin-alarm',
  WEBHOOK_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/tocsin-webhook',
  NOTIFY_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/tocsin-notify',
  SEAL_KEY_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:tocsin-seal',
  SERVICE_VERSION: '0.1.0',
  ENV_NAME: 'bench',
  LEGACY_SIGN: '0',
  REPORT_TIME_ZONE: 'Asia/Shanghai',
  BLOCK_PRIVATE_WEBHOOKS: '1',
  LOG_LEVEL: 'ERROR',
  NODE_OPTIONS: '--enable-source-maps',
};

/** Imports the bundle in a fresh node process; milliseconds from before the import to after it. */
function coldImport(file: string): number {
  const script =
    `const t0 = performance.now(); const m = await import(${JSON.stringify(pathToFileURL(file).href)});` +
    `if (typeof m.handler !== 'function') throw new Error('no handler');` +
    `process.stdout.write(String(performance.now() - t0));`;
  const { PATH, HOME } = process.env;
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH, HOME, ...LAMBDA_ENV },
    encoding: 'utf8',
  });
  if (out.status !== 0) throw new Error(`importing ${file} failed:\n${out.stderr}`);
  return Number(out.stdout);
}

/** Bytes of an entry's bundle that come from files under node_modules/<pkg>/. */
function bytesFrom(meta: Metafile, entry: string, pkg: string): number {
  let bytes = 0;
  for (const output of Object.values(meta.outputs)) {
    if (output.entryPoint !== entry) continue;
    for (const [input, info] of Object.entries(output.inputs)) {
      if (input.includes(`node_modules/${pkg}/`)) bytes += info.bytesInOutput;
    }
  }
  return bytes;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const kb = (bytes: number) => (bytes / 1024).toFixed(0);

interface Bundle extends DeployedEntry {
  file: string;
  bytes: number;
  ajvBytes: number;
  pinyinBytes: number;
  times: number[];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tocsin-coldstart-'));
  try {
    const list = entries();
    const built = await buildBundles(
      dir,
      list.map((e) => e.entry),
    );
    const bundles: Bundle[] = list.map((e) => {
      const file = join(dir, built.entries[e.entry]);
      return {
        ...e,
        file,
        bytes: statSync(file).size,
        ajvBytes: bytesFrom(built.metafile, e.entry, 'ajv'),
        pinyinBytes: bytesFrom(built.metafile, e.entry, 'pinyin-pro'),
        times: [],
      };
    });
    console.log(
      `${bundles.length} bundles in ${dir}; ${SAMPLES} cold imports each (node ${process.version})`,
    );

    for (let s = 0; s < SAMPLES; s++) for (const b of bundles) b.times.push(coldImport(b.file));

    const health = median(bundles.find((b) => b.entry === HEALTH)!.times);
    const reference = median(bundles.find((b) => b.entry === REFERENCE)!.times);
    const rows = bundles.map((b) => {
      const ms = median(b.times);
      const ratio = ms / reference;
      const verdict = b.http ? (ratio <= BUDGET ? 'PASS' : 'FAIL') : '-';
      const pinyin = b.pinyinBytes
        ? `${kb(b.pinyinBytes)} (${((100 * b.pinyinBytes) / b.bytes).toFixed(0)}%)`
        : '-';
      return { ...b, ms, ratio, toHealth: ms / health, verdict, pinyin };
    });
    const header = [
      'entry',
      'trigger',
      'KB',
      'ajv KB',
      'pinyin-pro KB',
      'ms (median)',
      'x /health',
      'x /user/profile',
      'budget',
    ];
    const table = [
      header,
      ...rows.map((r) => [
        r.entry,
        r.label,
        kb(r.bytes),
        kb(r.ajvBytes),
        r.pinyin,
        r.ms.toFixed(1),
        r.toHealth.toFixed(2),
        r.ratio.toFixed(2),
        r.verdict,
      ]),
    ];
    const widths = header.map((_, c) => Math.max(...table.map((row) => row[c].length)));
    for (const row of table) {
      console.log(
        row.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '),
      );
    }
    const failed = rows.filter((r) => r.verdict === 'FAIL');
    const withPinyin = rows.filter((r) => r.pinyinBytes > 0).map((r) => r.entry);
    console.log(
      `\npinyin-pro is in ${withPinyin.length} of ${rows.length} bundles: ${withPinyin.join(', ') || 'none'}`,
    );
    console.log(
      `${failed.length ? 'FAIL' : 'PASS'}  every HTTP function's cold import <= ${BUDGET}x GET /user/profile (${reference.toFixed(1)} ms; /health ${health.toFixed(1)} ms)` +
        (failed.length ? `: over budget ${failed.map((r) => r.entry).join(', ')}` : ''),
    );
    if (failed.length) process.exitCode = 1;
  } finally {
    if (args.keep) console.log(`bundles kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

await main();
