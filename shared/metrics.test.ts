import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resetConfig } from './config/env.ts';
import { count, flushMetrics, webhookLatency } from './metrics.ts';
import { jsonStdout } from './testing/stdout.ts';

const saved = { ...process.env };

/** The EMF lines written to stdout while `run` runs. */
const emfLines = async (run: () => void) => (await jsonStdout(run)).filter((l) => '_aws' in l);

function setEnv(local: boolean) {
  Object.assign(process.env, {
    TABLE_NAME: 'tocsin-test',
    AWS_REGION: 'eu-west-1',
    SEAL_KEY: randomBytes(32).toString('base64'),
    TOCSIN_LOCAL: local ? '1' : '0',
  });
  resetConfig();
}

beforeEach(() => setEnv(false));
afterEach(() => {
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, saved);
  resetConfig();
});

describe('metrics (CloudWatch embedded metric format)', () => {
  it('writes one line per metric and dimension set with the summed count, and the latencies as values', async () => {
    // Arrange: a batch's worth of counts
    for (let i = 0; i < 50; i++) count('PipelineOutcome', { outcome: 'compress_disable' });
    count('PipelineOutcome', { outcome: 'drop' }, 2);
    count('AlarmsRefused', { code: 4001 });
    webhookLatency(12);
    webhookLatency(30);
    // Act
    const lines = await emfLines(flushMetrics);
    // Assert
    const of = (name: string) => lines.filter((l) => name in l);
    expect(of('PipelineOutcome').map((l) => [l.outcome, l.PipelineOutcome])).toEqual([
      ['compress_disable', 50],
      ['drop', 2],
    ]);
    expect(of('AlarmsRefused').map((l) => [l.code, l.AlarmsRefused])).toEqual([['4001', 1]]);
    expect(of('WebhookLatency').map((l) => l.WebhookLatency)).toEqual([[12, 30]]);
    const meta = (lines[0]._aws as { CloudWatchMetrics: { Namespace: string }[] }).CloudWatchMetrics[0];
    expect(meta.Namespace).toBe('Tocsin');
    expect(lines).toHaveLength(4);
    // A second flush has nothing left to write
    expect(await emfLines(flushMetrics)).toEqual([]);
  });

  it('writes nothing on the local stack', async () => {
    setEnv(true);
    count('AlarmsAccepted');
    expect(await emfLines(flushMetrics)).toEqual([]);
  });
});

describe('lazy flushes (HTTP functions)', () => {
  it('write at most once per 10 s per container, keeping the counts in between', async () => {
    vi.useFakeTimers({ now: 1_800_000_000_000, toFake: ['Date'] });
    try {
      count('AlarmsRefused', { code: 4010 });
      const first = await emfLines(() => flushMetrics(true));
      count('AlarmsRefused', { code: 4010 });
      count('AlarmsRefused', { code: 4010 });
      const held = await emfLines(() => flushMetrics(true));
      vi.setSystemTime(1_800_000_010_001);
      const later = await emfLines(() => flushMetrics(true));
      expect(first.map((l) => l.AlarmsRefused)).toEqual([1]);
      expect(held).toEqual([]);
      expect(later.map((l) => l.AlarmsRefused)).toEqual([2]);
    } finally {
      vi.useRealTimers();
    }
  });
});
