/**
 * Operating the stack safely: isolation (reserved and maximum concurrency), alarms that reach someone
 * and cover the service, safe deploys (no default production, termination protection, no literal
 * secret, gradual deployment of the alarm path), the dashboard's alarm and people paths.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_OUTCOMES } from './constructs/dashboard.ts';
import { PRODUCTION_DEPLOYMENT } from './constructs/deployments.ts';
import type { Access } from './access.ts';
import { DEFAULT_INTAKE_CONCURRENCY, deployedRoutes, groupSpec } from './constructs/http-api.ts';
import {
  type AlarmKind,
  DEFAULT_QUEUE_MAX_AGE_SECONDS,
  SCHEDULE_SILENCE_MINUTES,
  TABLE_OPERATIONS,
} from './constructs/observability.ts';
import {
  DEFAULT_CONSUMER_CONCURRENCY,
  DEFAULT_RESERVED_CONCURRENCY,
  DISPATCHER_RESERVED,
  maxConcurrency,
  pascal,
  reservedConcurrency,
} from './constructs/queues.ts';
import { stackFromContext } from './context.ts';
import { type FunctionGroup, functionGroups, type RouteDef } from './definitions.ts';
import type { QueueName } from '../shared/contracts/messages.ts';
import { table } from '../shared/contracts/table.ts';
import { queues, schedule } from './consumers.ts';
import { METRICS } from '../shared/contracts/metrics.ts';
import { PROJECT_ROOT, TocsinStack, type TocsinStackProps } from './stack.ts';

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  UpdatePolicy?: Record<string, unknown>;
};
type Resources = Record<string, Resource>;
type AlarmProps = {
  AlarmName: string;
  AlarmDescription: string;
  MetricName?: string;
  Namespace?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  Metrics?: {
    Id: string;
    Expression?: string;
    MetricStat?: {
      Metric: { MetricName: string; Namespace: string; Dimensions: { Name: string; Value: unknown }[] };
    };
  }[];
  Threshold: number;
  ComparisonOperator: string;
  TreatMissingData: string;
  EvaluationPeriods: number;
  DatapointsToAlarm?: number;
  Period?: number;
  AlarmActions: unknown[];
};

const CDK_CONTEXT = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }
).context;
const SYNTH_TIMEOUT_MS = 180_000;
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:oncall';

function build(props: Partial<TocsinStackProps> = {}, id = 'Tocsin-test'): TocsinStack {
  const app = new App({ context: CDK_CONTEXT });
  return new TocsinStack(app, id, {
    env: { account: '123456789012', region: 'eu-west-1' },
    envName: 'test',
    skipBundling: true,
    ...props,
  });
}
type Synthesized = { Resources: Resources; Outputs: Record<string, { Value: { Ref?: string } }> };
const synthesized = (s: TocsinStack) => Template.fromStack(s).toJSON() as Synthesized;
const ofType = (res: Resources, type: string) => Object.entries(res).filter(([, r]) => r.Type === type);

/** The alarm named `<stack>-<Subject><Kind>` (`<Kind>` alone when it starts with the subject). */
function alarmNamed(res: Resources, subject: string, kind: AlarmKind): AlarmProps {
  const name = kind.startsWith(`${subject}-`) ? pascal(kind) : `${pascal(subject)}${pascal(kind)}`;
  const found = ofType(res, 'AWS::CloudWatch::Alarm')
    .map(([, r]) => r.Properties as AlarmProps)
    .filter((a) => a.AlarmName === `Tocsin-${res === prodRes ? 'production' : 'test'}-${name}`);
  expect(found, `${subject} ${kind}`).toHaveLength(1);
  return found[0];
}

/** Logical id of the function whose description names its entry. */
function functionOfEntry(res: Resources, entry: string): string {
  const ids = ofType(res, 'AWS::Lambda::Function')
    .filter(([, r]) => r.Properties.Description === `tocsin ${entry}`)
    .map(([id]) => id);
  expect(ids, entry).toHaveLength(1);
  return ids[0];
}

function aliasOf(res: Resources, fnId: string): [string, Resource] {
  const found = ofType(res, 'AWS::Lambda::Alias').filter(
    ([, a]) => JSON.stringify(a.Properties.FunctionName) === JSON.stringify({ Ref: fnId }),
  );
  expect(found, fnId).toHaveLength(1);
  return found[0];
}

/** The alarm intake function groups (the others serve routes of people and apps). */
const intakeGroups = Object.keys(DEFAULT_INTAKE_CONCURRENCY) as FunctionGroup[];
const alarmConsumerEntry = () => queues.find((q) => q.name === 'alarm')!.consumer;

let stack: TocsinStack;
let res: Resources;
let outputs: Synthesized['Outputs'];
/** A production stack with an existing topic and other concurrency settings. */
let prod: TocsinStack;
let prodRes: Resources;
let prodOutputs: Synthesized['Outputs'];

beforeAll(() => {
  stack = build();
  ({ Resources: res, Outputs: outputs } = synthesized(stack));
  prod = build(
    {
      envName: 'production',
      production: true,
      alarmTopicArn: TOPIC_ARN,
      intakeConcurrency: { 'alarm-report': 0, 'alarm-monitors': 20 },
      consumerConcurrency: { webhook: 0, notify: 3 },
    },
    'Tocsin-production',
  );
  ({ Resources: prodRes, Outputs: prodOutputs } = synthesized(prod));
}, SYNTH_TIMEOUT_MS * 2);

describe('intake isolation', () => {
  it('serves every /alarm/* route from one of the function groups, with reserved concurrency', () => {
    // Arrange
    const intake = deployedRoutes().filter((r) => r.auth === 'alarm');
    const reserved = ofType(res, 'AWS::Lambda::Function')
      .filter(([, f]) => f.Properties.ReservedConcurrentExecutions !== undefined)
      .map(([id, f]) => [id, f.Properties.ReservedConcurrentExecutions]);
    // Assert: every intake route is in a group, and only the group functions, the alarm consumer, the
    // due consumer and the due runner reserve
    expect(intake.length).toBeGreaterThan(10);
    expect(intake.every((r) => r.fn !== undefined)).toBe(true);
    expect(reserved.sort()).toEqual(
      [
        ...intakeGroups.map((g) => [
          functionOfEntry(res, functionGroups[g].handler),
          DEFAULT_INTAKE_CONCURRENCY[g],
        ]),
        [functionOfEntry(res, alarmConsumerEntry()), DEFAULT_RESERVED_CONCURRENCY.alarm],
        [functionOfEntry(res, queues.find((q) => q.name === 'due')!.consumer), DEFAULT_RESERVED_CONCURRENCY.due],
        [functionOfEntry(res, schedule.handler), DISPATCHER_RESERVED],
      ].sort(),
    );
    // A modest sum: the account keeps over 850 of its default 1,000 for everything else.
    const sum = [
      ...Object.values(DEFAULT_INTAKE_CONCURRENCY),
      ...Object.values(DEFAULT_RESERVED_CONCURRENCY),
      DISPATCHER_RESERVED,
    ].reduce((a, b) => a + b, 0);
    expect(sum).toBeLessThanOrEqual(140);
    // The alarm consumer's reservation holds its event source's cap.
    expect(DEFAULT_RESERVED_CONCURRENCY.alarm).toBeGreaterThan(DEFAULT_CONSUMER_CONCURRENCY.alarm);
  });

  it('routes each intake route to the live alias of its group function, with permission to invoke it', () => {
    for (const r of deployedRoutes().filter((x) => x.auth === 'alarm')) {
      // Arrange
      const routeKey = `${r.method} ${r.path}`;
      const [[, route]] = ofType(res, 'AWS::ApiGatewayV2::Route').filter(
        ([, x]) => x.Properties.RouteKey === routeKey,
      );
      const integrationId = /"Ref":"([^"]+)"/.exec(JSON.stringify(route.Properties.Target))![1];
      const [aliasId, alias] = aliasOf(res, functionOfEntry(res, functionGroups[r.fn!].handler));
      // Assert
      expect(res[integrationId].Properties.IntegrationUri, routeKey).toEqual({ Ref: aliasId });
      expect(alias.Properties.Name).toBe('live');
      const permissions = ofType(res, 'AWS::Lambda::Permission').filter(
        ([, p]) => JSON.stringify(p.Properties.FunctionName) === JSON.stringify({ Ref: aliasId }),
      );
      expect(permissions.length, routeKey).toBeGreaterThan(0);
    }
  });

  it('takes the reservations from the stack props: 0 reserves nothing, an unknown group is refused', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    // Arrange
    const report = functionOfEntry(prodRes, functionGroups['alarm-report'].handler);
    const monitors = functionOfEntry(prodRes, functionGroups['alarm-monitors'].handler);
    // Assert
    expect(prodRes[report].Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(prodRes[monitors].Properties.ReservedConcurrentExecutions).toBe(20);
    expect(() => build({ intakeConcurrency: { 'alarm-reprot': 5 } as never })).toThrow(
      /no intake function alarm-reprot/,
    );
    expect(() => build({ intakeConcurrency: { 'alarm-report': 2.5 } })).toThrow(/whole number/);
  });
});

describe('queue consumers', () => {
  const mappingOf = (resources: Resources, name: QueueName) => {
    const queueId = (resources === prodRes ? prodOutputs : outputs)[`${pascal(name)}QueueUrl`].Value.Ref;
    const found = ofType(resources, 'AWS::Lambda::EventSourceMapping').filter(
      ([, m]) =>
        JSON.stringify(m.Properties.EventSourceArn) === JSON.stringify({ 'Fn::GetAtt': [queueId, 'Arn'] }),
    );
    expect(found, name).toHaveLength(1);
    return found[0][1].Properties;
  };

  it.each(queues.map((q) => [q.name]))('cap the %s consumer with MaximumConcurrency', (name) => {
    expect(mappingOf(res, name as QueueName).ScalingConfig).toEqual({
      MaximumConcurrency: DEFAULT_CONSUMER_CONCURRENCY[name as QueueName],
    });
  });

  it('size the caps to what lies behind them: the alarm consumer below the webhook one', () => {
    expect(DEFAULT_CONSUMER_CONCURRENCY.alarm).toBeLessThan(DEFAULT_CONSUMER_CONCURRENCY.webhook);
    expect(DEFAULT_CONSUMER_CONCURRENCY.notify).toBeLessThanOrEqual(DEFAULT_CONSUMER_CONCURRENCY.alarm);
  });

  it.each(queues.map((q) => [q.name, q.consumer]))(
    'invoke the %s consumer through its live alias',
    (name, entry) => {
      const consumer = functionOfEntry(res, entry);
      const [aliasId] = aliasOf(res, consumer);
      // `<function name>:live`, the name taken from the alias's ARN.
      const target = JSON.stringify(mappingOf(res, name as QueueName).FunctionName);
      expect(target).toContain(`{"Ref":"${aliasId}"}`);
      expect(target).toContain('":live"');
    },
  );

  it('reserve instances for the alarm consumer and the runner from the stack props, never below the cap', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    expect(reservedConcurrency('alarm', undefined, 10)).toBe(DEFAULT_RESERVED_CONCURRENCY.alarm);
    expect(reservedConcurrency('due', 0, 10)).toBeUndefined();
    expect(reservedConcurrency('alarm', 20, undefined)).toBe(20);
    expect(() => reservedConcurrency('alarm', 8, 10)).toThrow(/below the alarm consumer's cap/);
    expect(() => reservedConcurrency('due', 19, 20)).toThrow(/below the due consumer's cap/);
    expect(() => reservedConcurrency('due', 1.5, 10)).toThrow(/whole number/);
    expect(() => build({ consumerConcurrency: { alarm: 30 } })).toThrow(/reservedConcurrency.alarm \(12\)/);
  });

  it('take their caps from the stack props: 0 is no cap', () => {
    expect(mappingOf(prodRes, 'webhook').ScalingConfig).toBeUndefined();
    expect(mappingOf(prodRes, 'notify').ScalingConfig).toEqual({ MaximumConcurrency: 3 });
    expect(mappingOf(prodRes, 'alarm').ScalingConfig).toEqual({
      MaximumConcurrency: DEFAULT_CONSUMER_CONCURRENCY.alarm,
    });
  });

  it.each([1, 1001, 2.5, -1])('refuse %s instances (SQS takes 2 to 1,000)', (n) => {
    expect(() => maxConcurrency('alarm', n)).toThrow(/consumerConcurrency.alarm: 2 to 1000/);
  });
});

describe('the access of a function serving several routes', () => {
  const route = (path: string, a: Access, extra: Partial<RouteDef> = {}): RouteDef => ({
    method: 'POST',
    path,
    handler: `functions/alarm/${path.slice(1)}.ts`,
    fn: 'alarm-report',
    auth: 'alarm',
    access: a,
    ...extra,
  });

  it('is the union of its routes: each action on every prefix or queue any route names', () => {
    // Arrange
    const report = route('/report', {
      items: { GetItem: ['TASK#'], PutItem: ['REPORT#'] },
      queues: { SendMessage: ['alarm'] },
      secrets: ['seal-key'],
    });
    const test = route('/test', { items: { GetItem: ['TASK#', 'GROUP#'] }, secrets: ['seal-key'] });
    // Act
    const spec = groupSpec([report, test]);
    // Assert
    expect(spec).toEqual({
      entry: functionGroups['alarm-report'].handler,
      kind: 'ingest',
      access: {
        items: { GetItem: ['GROUP#', 'TASK#'], PutItem: ['REPORT#'] },
        queues: { SendMessage: ['alarm'] },
        secrets: ['seal-key'],
      },
    });
  });

  it('refuses routes that disagree on the kind of function, and no routes at all', () => {
    const intake = route('/report', {});
    const app = route('/other', {}, { auth: 'app' });
    expect(() => groupSpec([intake, app])).toThrow(/kind: the routes of one function disagree/);
    expect(() => groupSpec([])).toThrow(/no routes/);
  });

  it("gives each intake group's function what its routes declare together", () => {
    // POST /alarm/test only reads; POST /alarm/report writes its idempotency receipt and queues alarms.
    const fn = functionOfEntry(res, functionGroups['alarm-report'].handler);
    const role = (res[fn].Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    const statements = (
      (res[role].Properties.Policies ?? []) as {
        PolicyDocument: { Statement: { Action: string | string[] }[] };
      }[]
    ).flatMap((p) => p.PolicyDocument.Statement);
    const actions = new Set(statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])));
    expect(actions).toContain('sqs:SendMessage');
    expect(actions).toContain('dynamodb:PutItem');
    expect(actions).toContain('dynamodb:GetItem');
    expect(actions).not.toContain('dynamodb:Scan');
    expect(actions).not.toContain('dynamodb:DeleteItem');
  });
});

describe('alarm destination', () => {
  it('is required of a production stack, naming the three ways to give one', () => {
    let error: Error | undefined;
    try {
      build({ envName: 'production', production: true }, 'Tocsin-production');
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(/Tocsin-production is a production stack/);
    for (const option of ['-c alarmEmail=', '-c alarmTopicArn=', '-c alarmDestination=none'])
      expect(error?.message).toContain(option);
  });

  it('may be none in production only when said so, and never beside a destination', () => {
    // Act
    const none = build({ envName: 'production', production: true, alarmDestination: 'none' }, 'Tocsin-p');
    // Assert: its own topic, no subscriber yet
    expect(none.observability.topic).toBeInstanceOf(sns.Topic);
    expect(none.node.findAll().some((c) => c instanceof sns.Subscription)).toBe(false);
    expect(() => build({ alarmDestination: 'none', alarmEmail: 'ops@example.com' })).toThrow(/contradicts/);
  });

  it('is optional for other stacks', () => {
    expect(stack.observability.alarms.length).toBeGreaterThan(0);
  });

  it('can be an existing topic: every alarm notifies it and the stack creates none', () => {
    expect(ofType(prodRes, 'AWS::SNS::Topic')).toEqual([]);
    const alarms = ofType(prodRes, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties as AlarmProps);
    expect(alarms.length).toBeGreaterThan(20);
    for (const a of alarms) expect(a.AlarmActions, a.AlarmName).toEqual([TOPIC_ARN]);
  });
});

describe('alarms', () => {
  it.each(queues.map((q) => [q.name]))('fire when the oldest %s message is too old', (name) => {
    // Act
    const a = alarmNamed(res, name, 'queue-age');
    // Assert
    expect(a).toMatchObject({
      MetricName: 'ApproximateAgeOfOldestMessage',
      Threshold: DEFAULT_QUEUE_MAX_AGE_SECONDS[name as QueueName],
      EvaluationPeriods: 5,
      DatapointsToAlarm: 5,
    });
  });

  it('leave webhook retries more room than the alarm queue', () => {
    expect(DEFAULT_QUEUE_MAX_AGE_SECONDS.alarm).toBe(60);
    expect(DEFAULT_QUEUE_MAX_AGE_SECONDS.webhook).toBeGreaterThan(DEFAULT_QUEUE_MAX_AGE_SECONDS.notify);
    expect(DEFAULT_QUEUE_MAX_AGE_SECONDS.notify).toBeGreaterThan(DEFAULT_QUEUE_MAX_AGE_SECONDS.alarm);
  });

  it('fire on read and write throttles of the table and of every index', () => {
    // Act
    const a = alarmNamed(res, 'table', 'table-throttles');
    const metrics = (a.Metrics ?? []).filter((m) => m.MetricStat).map((m) => m.MetricStat!.Metric);
    // Assert
    const seen = metrics.map((m) => {
      const index = m.Dimensions.find((d) => d.Name === 'GlobalSecondaryIndexName')?.Value ?? 'table';
      return `${m.MetricName} ${index}`;
    });
    const expected = ['table', ...table.globalSecondaryIndexes.map((g) => g.indexName)].flatMap((i) => [
      `ReadThrottleEvents ${i}`,
      `WriteThrottleEvents ${i}`,
    ]);
    expect(seen.sort()).toEqual(expected.sort());
    expect(a).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
  });

  it("fire on DynamoDB system errors of every operation the service calls (an alarm's math reads 10)", () => {
    const a = alarmNamed(res, 'table', 'table-errors');
    const ops = (a.Metrics ?? [])
      .filter((m) => m.MetricStat)
      .map((m) => {
        expect(m.MetricStat!.Metric.MetricName).toBe('SystemErrors');
        return m.MetricStat!.Metric.Dimensions.find((d) => d.Name === 'Operation')?.Value;
      });
    expect(ops.sort()).toEqual([...TABLE_OPERATIONS].sort());
    expect(ops.length).toBeLessThanOrEqual(10);
  });

  it.each([
    ['alarm-log', 'alarm-log-lost', METRICS.alarmLogLost.name],
    ['due-work', 'due-work-buried', METRICS.dueWorkBuried.name],
  ] as const)(
    'fire on the custom metric of %s, addressed by service and environment',
    (subject, kind, name) => {
      expect(alarmNamed(res, subject, kind)).toMatchObject({
        Namespace: METRICS.namespace,
        MetricName: name,
        Dimensions: expect.arrayContaining([
          { Name: METRICS.serviceDimension, Value: METRICS.service },
          { Name: METRICS.environmentDimension, Value: 'test' },
        ]),
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
      expect(alarmNamed(prodRes, subject, kind).Dimensions).toContainEqual({
        Name: METRICS.environmentDimension,
        Value: 'production',
      });
    },
  );

  it('fire when the schedule stops: no run is missing data, and missing data breaches', () => {
    const runner = functionOfEntry(res, 'functions/schedule/run-due-work.ts');
    expect(alarmNamed(res, 'RunDueWork', 'schedule-stopped')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: runner } }],
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      TreatMissingData: 'breaching',
      Period: 300,
      EvaluationPeriods: SCHEDULE_SILENCE_MINUTES / 5,
    });
  });

  it('each name a runbook section of docs/aws-operations.md that exists', () => {
    // Arrange
    const runbook = readFileSync(join(PROJECT_ROOT, 'docs/aws-operations.md'), 'utf8');
    const kinds = new Set(stack.observability.alarms.map((a) => a.kind));
    // Assert
    expect(kinds.size).toBe(18);
    for (const kind of kinds) expect(runbook, kind).toContain(`\n### ${kind}\n`);
    for (const [, a] of ofType(res, 'AWS::CloudWatch::Alarm')) {
      const { AlarmDescription } = a.Properties as AlarmProps;
      const kind = /Runbook: docs\/aws-operations\.md, "([a-z0-9-]+)"\.$/.exec(AlarmDescription)?.[1];
      expect(kinds.has(kind as AlarmKind), AlarmDescription).toBe(true);
    }
  });

  it('keep the stack under 500 resources', () => {
    const count = Object.keys(res).length;
    console.log(`resources: ${count} (test stack), ${Object.keys(prodRes).length} (production)`);
    console.log(`alarms: ${stack.observability.alarms.map((a) => a.alarm.node.id).join(', ')}`);
    // About 450: the gradual deployments add a version, an alias, a deployment group and a version
    // alarm for each of eight functions, and the pre-traffic check; the route functions beyond the
    // alarm path share one log group. A next addition of some size needs the alarms (or the route
    // functions) in a stack of their own.
    expect(count).toBeLessThan(475);
  });
});

describe('safe to deploy', () => {
  const contextStack = (context: Record<string, string>) =>
    stackFromContext(new App({ context: { ...CDK_CONTEXT, ...context } }));

  it('makes a dev stack without -c envName, never a production one', () => {
    const { id, props } = contextStack({});
    expect(id).toBe('Tocsin-dev');
    expect(props).toMatchObject({ envName: 'dev', production: false });
  });

  it('makes a production stack of envName production, or of production=true with an envName', () => {
    expect(contextStack({ envName: 'production' }).props.production).toBe(true);
    expect(contextStack({ envName: 'prod-eu', production: 'true' }).props.production).toBe(true);
    expect(contextStack({ envName: 'staging' }).props.production).toBe(false);
    expect(() => contextStack({ production: 'true' })).toThrow(/explicit -c envName/);
    expect(() => contextStack({ envName: 'production', production: 'false' })).toThrow(/always a production/);
  });

  it('reads the destination and concurrency settings, off meaning none', () => {
    // Act
    const { props } = contextStack({
      envName: 'production',
      alarmDestination: 'none',
      intakeConcurrency: 'off',
      consumerConcurrency: '{"alarm":8}',
      reservedConcurrency: 'off',
      deployCheckTask: '100001',
    });
    // Assert
    expect(props).toMatchObject({
      alarmDestination: 'none',
      intakeConcurrency: { 'alarm-report': 0, 'alarm-monitors': 0 },
      consumerConcurrency: { alarm: 8 },
      reservedConcurrency: { alarm: 0, due: 0 },
      deployCheckTask: 100001,
    });
    expect(() => contextStack({ deployCheckTask: 'abc' })).toThrow(/deployCheckTask must be a task id/);
    expect(() => contextStack({ alarmDestination: 'sms' })).toThrow(/alarmDestination takes only 'none'/);
    expect(() => contextStack({ consumerConcurrency: '{"alarm":"many"}' })).toThrow(/whole number/);
  });

  it('protects production stacks from termination, and only those', () => {
    expect(prod.terminationProtection).toBe(true);
    expect(stack.terminationProtection).toBe(false);
  });

  it('writes no secret value into the template', () => {
    for (const [id, r] of ofType(res, 'AWS::SecretsManager::Secret')) {
      expect(r.Properties.SecretString, id).toBeUndefined();
    }
    expect(JSON.stringify(res)).not.toMatch(/"SecretString"/);
    const notify = outputs.NotifySecretArn.Value.Ref!;
    expect(res[notify].Properties.GenerateSecretString).toBeUndefined();
  });
});

describe('gradual deployment', () => {
  const aliased = () => [
    ...intakeGroups.map((g) => functionGroups[g].handler),
    ...queues.map((q) => q.consumer),
    schedule.handler,
  ];

  it('moves the live alias of every intake function, consumer and the runner through CodeDeploy, rolled back on its alarms', () => {
    for (const entry of aliased()) {
      // Arrange
      const fn = functionOfEntry(res, entry);
      const [, alias] = aliasOf(res, fn);
      const update = (alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate ?? {}) as {
        DeploymentGroupName?: { Ref: string };
      };
      const group = res[update.DeploymentGroupName?.Ref ?? ''];
      // Assert
      expect(group?.Type, entry).toBe('AWS::CodeDeploy::DeploymentGroup');
      expect(group.Properties).toMatchObject({
        DeploymentConfigName: 'CodeDeployDefault.LambdaAllAtOnce',
        AutoRollbackConfiguration: {
          Enabled: true,
          Events: expect.arrayContaining(['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_ALARM']),
        },
      });
      const alarms = JSON.stringify(group.Properties.AlarmConfiguration);
      const errors = ofType(res, 'AWS::CloudWatch::Alarm').find(
        ([, a]) =>
          (a.Properties as AlarmProps).MetricName === 'Errors' &&
          JSON.stringify((a.Properties as AlarmProps).Dimensions) ===
            JSON.stringify([{ Name: 'FunctionName', Value: { Ref: fn } }]),
      );
      expect(alarms, entry).toContain(`"${errors?.[0]}"`);
    }
    expect(ofType(res, 'AWS::Lambda::Alias')).toHaveLength(aliased().length);
    expect(ofType(res, 'AWS::CodeDeploy::DeploymentGroup')).toHaveLength(aliased().length);
  });

  it('is a canary in production', () => {
    const groups = ofType(prodRes, 'AWS::CodeDeploy::DeploymentGroup');
    expect(groups).toHaveLength(aliased().length);
    for (const [, g] of groups) {
      expect(g.Properties.DeploymentConfigName).toBe(PRODUCTION_DEPLOYMENT.deploymentConfigName);
    }
    expect(PRODUCTION_DEPLOYMENT.deploymentConfigName).toBe(
      'CodeDeployDefault.LambdaCanary10Percent10Minutes',
    );
  });

  it('keeps reserved concurrency on the function, not on the alias', () => {
    for (const [, a] of ofType(res, 'AWS::Lambda::Alias')) {
      expect(a.Properties.ProvisionedConcurrencyConfig).toBeUndefined();
    }
    const fn = functionOfEntry(res, functionGroups['alarm-report'].handler);
    expect(res[fn].Properties.ReservedConcurrentExecutions).toBe(DEFAULT_INTAKE_CONCURRENCY['alarm-report']);
  });
});

describe('dashboard', () => {
  const body = () => JSON.stringify(ofType(res, 'AWS::CloudWatch::Dashboard')[0][1].Properties.DashboardBody);

  it('shows the people path beside the alarm path', () => {
    // Arrange
    const text = body();
    const order = [
      'Alarm path: alarms accepted',
      'Alarm path: alarm queue',
      'People path: notifications sent by channel',
      'People path: notifications failed by channel',
      'People path: notifications skipped by channel',
      'People path: notify queue',
    ].map((title) => {
      const at = text.indexOf(title);
      expect(at, title).toBeGreaterThan(-1);
      return at;
    });
    // Assert: the two rows follow each other
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    for (const outcome of Object.values(CHANNEL_OUTCOMES).flat()) {
      expect(text, outcome).toContain(`outcome=\\\\\\"${outcome}\\\\\\"`);
    }
  });

  it("graphs only this stack's environment of the custom metrics", () => {
    const searches = body().match(/SEARCH\([^)]*\)/g) ?? [];
    expect(searches.length).toBeGreaterThan(5);
    for (const s of searches) expect(s).toContain(`${METRICS.environmentDimension}=\\\\\\"test\\\\\\"`);
  });
});
