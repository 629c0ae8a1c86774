import { randomBytes } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetConfig } from './config/env.ts';
import { BadRequestError } from './domain/errors.ts';
import { alarmSender } from './http/auth/alarm.ts';
import { anyone } from './http/auth/public.ts';
import { httpHandler } from './http/handler.ts';
import { anyJsonBody, noInput } from './http/input.ts';
import { lambdaContext } from './local/lambda.ts';
import { count, countByVersion, flushMetrics, measure, webhookLatency } from './metrics.ts';
import { observed } from './observe.ts';
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
    ENV_NAME: 'staging-eu',
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

/** The dimension names of an EMF line (its one dimension set). */
const dimensionsOf = (line: Record<string, unknown>) =>
  (line._aws as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics[0].Dimensions[0];

describe('dimensions', () => {
  it('every metric line names its service and environment (ENV_NAME) beside its own dimensions', async () => {
    count('AlarmsAccepted', {}, 3);
    count('ChannelDelivery', { channel: 'sms', outcome: 'sent' });
    count('AlarmsRefused', { code: 401 });
    webhookLatency(25);
    const lines = await emfLines(flushMetrics);
    expect(lines).toHaveLength(4);
    for (const line of lines) {
      expect(line).toMatchObject({ service: 'tocsin', environment: 'staging-eu' });
      expect(dimensionsOf(line)).toEqual(expect.arrayContaining(['service', 'environment']));
    }
    const channel = lines.find((l) => 'ChannelDelivery' in l) as Record<string, unknown>;
    expect(dimensionsOf(channel).sort()).toEqual(['channel', 'environment', 'outcome', 'service']);
  });
});

describe('queue consumers and the runner', () => {
  it('count the items of a batch and its failures per version; a batch that threw fails whole', async () => {
    // Arrange
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'Tocsin-staging-WebhookConsumer';
    process.env.AWS_LAMBDA_FUNCTION_VERSION = '3';
    const records = { Records: [{}, {}, {}] };
    const partly = observed(async () => ({ batchItemFailures: [{ itemIdentifier: 'a' }] }));
    const throwing = observed(async (): Promise<{ batchItemFailures: [] }> => {
      throw new Error('boom');
    });
    const runner = observed(
      async () => ({ ran: 4, failed: 1 }),
      (_e, r) => (r ? { items: r.ran + r.failed, failures: r.failed } : { items: 1, failures: 1 }),
    );
    const versioned = (lines: Record<string, unknown>[], name: string) =>
      lines.filter((l) => name in l && l.version === '3').map((l) => l[name]);
    // Act
    const a = await emfLines(() => partly(records, lambdaContext('c')));
    const b = await emfLines(() => throwing(records, lambdaContext('c')).catch(() => undefined));
    const c = await emfLines(() => runner({}, lambdaContext('c')));
    // Assert
    expect([versioned(a, 'BatchItems'), versioned(a, 'BatchItemFailures')]).toEqual([[3], [1]]);
    expect([versioned(b, 'BatchItems'), versioned(b, 'BatchItemFailures')]).toEqual([[3], [3]]);
    expect([versioned(c, 'BatchItems'), versioned(c, 'BatchItemFailures')]).toEqual([[5], [1]]);
    // One line, counted with the version and for every version of the function
    const [line] = a.filter((l) => 'BatchItems' in l);
    expect(a.filter((l) => 'BatchItems' in l)).toHaveLength(1);
    expect(line.function).toBe('Tocsin-staging-WebhookConsumer');
    expect(
      (line._aws as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics[0].Dimensions.map(
        (d) => [...d].sort(),
      ),
    ).toEqual([
      ['environment', 'function', 'service', 'version'],
      ['environment', 'function', 'service'],
    ]);
  });
});

describe('distributions', () => {
  it('write every value of a distribution metric in one line, without the version dimensions', async () => {
    countByVersion('BatchItems', 25);
    measure('PipelineLagMs', 120);
    measure('PipelineLagMs', 80);
    const lines = await emfLines(flushMetrics);
    const [lag] = lines.filter((l) => 'PipelineLagMs' in l);
    expect(lag.PipelineLagMs).toEqual([120, 80]);
    expect(dimensionsOf(lag).sort()).toEqual(['environment', 'service']);
  });
});

describe('HTTP functions', () => {
  const event = (body: string) =>
    ({
      headers: { 'content-type': 'application/json' },
      rawPath: '/alarm/report',
      requestContext: { http: { method: 'POST' } },
      body,
    }) as unknown as APIGatewayProxyEventV2;
  // A refusal is counted by the factory (AlarmsRefused by code), a success by the handler's body.
  const handler = httpHandler<{ ok?: boolean }, unknown>(
    { auth: alarmSender, input: anyJsonBody },
    async (input) => {
      if (!input.ok) throw new BadRequestError('no');
      count('WebhookDelivery', { outcome: 'delivered' });
      return {};
    },
  );
  const invoke = (body: string) => emfLines(() => handler(event(body), lambdaContext('tocsin-test')));

  it('write what an invocation counted at its end, every invocation, refused or answered', async () => {
    const first = await invoke('{}');
    const second = await invoke('{}');
    const third = await invoke('{"ok": true}');
    const refused = (lines: Record<string, unknown>[]) => lines.filter((l) => 'AlarmsRefused' in l);
    expect(refused(first).map((l) => [l.AlarmsRefused, l.code, l.environment])).toEqual([
      [1, '400', 'staging-eu'],
    ]);
    expect(refused(second).map((l) => [l.AlarmsRefused, l.code])).toEqual([[1, '400']]);
    const delivered = third.filter((l) => 'WebhookDelivery' in l);
    expect(delivered.map((l) => [l.WebhookDelivery, l.outcome, l.environment])).toEqual([
      [1, 'delivered', 'staging-eu'],
    ]);
  });

  it("count an intake's answers and refusals per function version, and for all its versions", async () => {
    // Arrange: the variables Lambda sets
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'Tocsin-staging-AlarmReport';
    process.env.AWS_LAMBDA_FUNCTION_VERSION = '12';
    // Act
    const refusedLines = await invoke('{}');
    const answeredLines = await invoke('{"ok": true}');
    // Assert: one line each, with the function and its version (and for all versions)
    const of = (lines: Record<string, unknown>[]) =>
      lines
        .filter((l) => 'IntakeReports' in l)
        .map((l) => [l.IntakeReports, l.IntakeRefused, l.function, l.version]);
    expect(of(refusedLines)).toEqual([[1, 1, 'Tocsin-staging-AlarmReport', '12']]);
    expect(of(answeredLines)).toEqual([[1, undefined, 'Tocsin-staging-AlarmReport', '12']]);
  });

  it('write nothing for an invocation that counted nothing', async () => {
    const quiet = httpHandler({ auth: anyone, input: noInput }, async () => ({}));
    const lines = await emfLines(() => quiet(event(''), lambdaContext('tocsin-test')));
    expect(lines).toEqual([]);
  });
});
