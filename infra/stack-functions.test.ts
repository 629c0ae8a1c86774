import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { METRICS } from '../shared/contracts/metrics.ts';
import { queues, schedule } from './consumers.ts';
import { PROJECT_ROOT } from './stack.ts';
import {
  allActions,
  functionFor,
  functionOfRoute,
  functionSpecs,
  ofType,
  queueId,
  resources,
  secretId,
  type Resource,
  type Statement,
  statementsOf,
  synth,
  SYNTH_TIMEOUT_MS,
  synthOnce,
  tableId,
  XRAY_ACTIONS,
} from './test-stack.ts';

beforeAll(synthOnce, SYNTH_TIMEOUT_MS);

describe('grants', () => {
  // What each function is granted: infra/grants.test.ts.
  it('stays well below the 500 resources CloudFormation allows in a stack', () => {
    const count = Object.keys(resources).length;
    // Room left for more: see "keep the stack under 500 resources" (ops.test.ts).
    expect(count).toBeLessThan(475);
  });

  it("never grants a wildcard action, nor any resource '*' but X-Ray's", () => {
    // Policies, and the roles' inline ones (where the functions' roles hold their whole access).
    const documents = [
      ...ofType('AWS::IAM::Policy').map(([, p]) => p.Properties.PolicyDocument),
      ...ofType('AWS::IAM::Role').flatMap(([, r]) =>
        ((r.Properties.Policies ?? []) as { PolicyDocument: unknown }[]).map((p) => p.PolicyDocument),
      ),
    ] as { Statement: Statement[] }[];
    expect(documents.length).toBeGreaterThan(0);
    for (const document of documents) {
      for (const s of document.Statement) {
        expect(allActions([s]).has('*')).toBe(false);
        // X-Ray trace writes have no resource-level permissions (acknowledged in infra/nag.ts).
        if (s.Resource === '*') expect([...allActions([s])].sort()).toEqual(XRAY_ACTIONS);
      }
    }
  });
});

describe('functions', () => {
  it('runs every function on nodejs24.x / arm64, the alarm path with log groups of its own', () => {
    const fns = ofType('AWS::Lambda::Function');
    expect(fns).toHaveLength(functionSpecs().length);
    const groupOf = (fn: Resource) => (fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
    const shared = groupOf(resources[functionOfRoute('GET /alarmtask/show')]);
    for (const [id, fn] of fns) {
      expect(fn.Properties, id).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
      });
      const logGroup = resources[groupOf(fn)];
      expect(logGroup.Properties.RetentionInDays, id).toBe(30);
      // The intake functions, consumers, runner and check: one each; the other routes share one.
      const ownGroup = fns.filter(([, other]) => groupOf(other) === groupOf(fn)).length === 1;
      expect(ownGroup, id).toBe(groupOf(fn) !== shared);
    }
    expect(fns.filter(([, fn]) => groupOf(fn) === shared).length).toBeGreaterThan(40);
    for (const id of [functionOfRoute('POST /alarm/report'), functionFor(queues[0].consumer), functionFor(schedule.handler)])
      expect(groupOf(resources[id]), id).not.toBe(shared);
  });

  it('gives every function the configuration environment', () => {
    // Arrange
    const version = (
      JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
    ).version;
    // Assert
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env, id).toMatchObject({
        TABLE_NAME: { Ref: tableId() },
        ALARM_QUEUE_URL: { Ref: queueId('alarm') },
        WEBHOOK_QUEUE_URL: { Ref: queueId('webhook') },
        NOTIFY_QUEUE_URL: { Ref: queueId('notify') },
        SEAL_KEY_SECRET_ARN: { Ref: secretId() },
        SERVICE_VERSION: version,
        ENV_NAME: 'test',
        LEGACY_SIGN: '1',
        REPORT_TIME_ZONE: 'UTC',
        BLOCK_PRIVATE_WEBHOOKS: '1',
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: 'tocsin',
        POWERTOOLS_METRICS_NAMESPACE: 'Tocsin',
      });
      expect(env.SEAL_KEY, id).toBeUndefined();
    }
  });

  it('passes deployment settings through to the environment', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Act
    const other = synth({
      envName: 'staging',
      legacySign: false,
      reportTimeZone: 'Asia/Shanghai',
      tuning: { ALARM_RATE_LIMIT: '100' },
    });
    // Assert
    const fns = other.findResources('AWS::Lambda::Function');
    expect(Object.keys(fns)).toHaveLength(functionSpecs().length);
    for (const fn of Object.values(fns)) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        ENV_NAME: 'staging',
        LEGACY_SIGN: '0',
        REPORT_TIME_ZONE: 'Asia/Shanghai',
        ALARM_RATE_LIMIT: '100',
      });
    }
  });

  it('tells the functions that make or answer claim links the public base URL: the API, or the one given', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    // Arrange
    const linked = [
      'functions/http/claim/get-claim.ts',
      'functions/http/claim/post-claim.ts',
      'functions/queue/send-notification.ts',
    ];
    const urls = (fns: [string, { Properties: Record<string, unknown> }][]) =>
      Object.fromEntries(
        fns.flatMap(([, fn]) => {
          const url = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables
            .PUBLIC_BASE_URL;
          return url === undefined ? [] : [[String(fn.Properties.Description).replace('tocsin ', ''), url]];
        }),
      );
    // Act
    const byDefault = urls(ofType('AWS::Lambda::Function'));
    const given = synth({ publicBaseUrl: 'https://alarms.example.com/api' }).findResources(
      'AWS::Lambda::Function',
    );
    // Assert: the API's own endpoint (no cycle: the API does not depend on these functions).
    expect(Object.keys(byDefault).sort()).toEqual(linked);
    for (const url of Object.values(byDefault))
      expect(url).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^HttpApi/), 'ApiEndpoint'] });
    expect(urls(Object.entries(given) as never)).toEqual(
      Object.fromEntries(linked.map((entry) => [entry, 'https://alarms.example.com/api'])),
    );
    expect(() => synth({ publicBaseUrl: 'http://alarms.example.com' })).toThrow(/publicBaseUrl/);
  });

  it('refuses unknown tuning or notification variables', () => {
    expect(() => synth({ tuning: { ALARM_RATE_LIMT: '1' } })).toThrow(/ALARM_RATE_LIMT/);
    expect(() => synth({ notifyEnvironment: { EMAIL_FORM: 'a@b.c' } })).toThrow(/EMAIL_FORM/);
  });
});

describe('tracing and Powertools', () => {
  it('traces every function actively with X-Ray, which may write its segments', () => {
    const fns = ofType('AWS::Lambda::Function');
    expect(fns).toHaveLength(functionSpecs().length);
    for (const [id, fn] of fns) {
      expect(fn.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
      for (const action of XRAY_ACTIONS) expect(allActions(statementsOf(id)), id).toContain(action);
    }
  });

  it('announces the namespace and service of shared/contracts/metrics.ts to Powertools', () => {
    expect(METRICS).toMatchObject({ namespace: 'Tocsin', service: 'tocsin' });
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.POWERTOOLS_METRICS_NAMESPACE, id).toBe(METRICS.namespace);
      expect(env.POWERTOOLS_SERVICE_NAME, id).toBe(METRICS.service);
    }
  });
});
