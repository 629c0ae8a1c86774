import { beforeAll, describe, expect, it } from 'vitest';
import { VERSION_FAILURE_MARGIN, VERSION_MIN_ITEMS } from './constructs/deployments.ts';
import { DEFAULT_INTAKE_CONCURRENCY } from './constructs/http-api.ts';
import {
  DEFAULT_HANDED_BACK_THRESHOLD,
  DEFAULT_IN_FLIGHT_MAX,
  DEFAULT_PIPELINE_LAG_P99_MS,
} from './constructs/observability.ts';
import { pascal } from './constructs/queues.ts';
import { type FunctionGroup, functionGroups } from './definitions.ts';
import { deployCheck, queues, schedule } from './consumers.ts';
import type { QueueName } from '../shared/contracts/messages.ts';
import { METRICS } from '../shared/contracts/metrics.ts';
import {
  functionFor,
  ofType,
  queueId,
  type Resource,
  resources,
  statementsOf,
  SYNTH_TIMEOUT_MS,
  synthOnce,
} from './test-stack.ts';

/**
 * What a gradual deployment watches and what holds the service at scale, in the synthesized template:
 * an alias and a deployment group for every consumer and the runner as for intake, each group's
 * rollback alarms (its version against all versions, its dead-letter queue), the pre-traffic check,
 * and the alarms on queues held in flight, pipeline lag, hand-backs, a degraded rate limit and the
 * API's 429s on /alarm/*.
 */
beforeAll(synthOnce, SYNTH_TIMEOUT_MS);

type MetricStat = {
  Metric: { MetricName: string; Namespace: string; Dimensions: { Name: string; Value: unknown }[] };
  Stat: string;
};
type AlarmProps = {
  AlarmName: unknown;
  MetricName?: string;
  Namespace?: string;
  ExtendedStatistic?: string;
  Statistic?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  Metrics?: { Id: string; Expression?: string; MetricStat?: MetricStat }[];
  Threshold: number;
  EvaluationPeriods: number;
  DatapointsToAlarm?: number;
};

/** The alarm intake functions (the other function groups serve people and apps, deployed at once). */
const intakeEntries = (): string[] =>
  (Object.keys(DEFAULT_INTAKE_CONCURRENCY) as FunctionGroup[]).map((g) => functionGroups[g].handler);

const aliasedEntries = () => [
  ...intakeEntries(),
  ...queues.map((q) => q.consumer),
  schedule.handler,
];

/** The alarm named `Tocsin-test-<name>` (alarm names are joined with the stack name). */
function alarm(name: string): [string, AlarmProps] {
  const found = ofType('AWS::CloudWatch::Alarm').filter(([, a]) =>
    JSON.stringify(a.Properties.AlarmName).includes(`-${name}"`),
  );
  expect(found, name).toHaveLength(1);
  return [found[0][0], found[0][1].Properties as AlarmProps];
}

function aliasOf(
  fn: string,
): [string, Resource & { UpdatePolicy?: Record<string, unknown>; DependsOn?: string[] }] {
  const found = ofType('AWS::Lambda::Alias').filter(
    ([, a]) => JSON.stringify(a.Properties.FunctionName) === JSON.stringify({ Ref: fn }),
  );
  expect(found, fn).toHaveLength(1);
  return found[0] as [string, Resource & { UpdatePolicy?: Record<string, unknown>; DependsOn?: string[] }];
}

function groupOf(fn: string): Resource {
  const [, alias] = aliasOf(fn);
  const update = alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate as {
    DeploymentGroupName: { Ref: string };
    BeforeAllowTrafficHook?: unknown;
  };
  return resources[update.DeploymentGroupName.Ref];
}

const alarmIdsOf = (group: Resource) =>
  (group.Properties.AlarmConfiguration as { Alarms: { Name: { Ref: string } }[] }).Alarms.map(
    (a) => a.Name.Ref,
  );

describe('gradual deployment of every consumer and the runner', () => {
  it.each(aliasedEntries().map((e) => [e]))(
    '%s: its version is rolled back when it fails more than all versions, and the alias waits for that alarm',
    (entry) => {
      // Arrange
      const fn = functionFor(entry);
      const [aliasId, alias] = aliasOf(fn);
      const version = (alias.Properties.FunctionVersion as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
      const intake = intakeEntries().includes(entry);
      const kind = intake ? 'VersionRefusals' : 'VersionFailures';
      const [alarmId, a] = alarm(`${fn.replace(/^Functions/, '').replace(/[0-9A-F]{8}$/, '')}${kind}`);
      // Assert: the version's metrics against all versions'
      const stats = (a.Metrics ?? []).flatMap((m) => (m.MetricStat ? [m.MetricStat] : []));
      const [items, failures] = intake
        ? [METRICS.intakeReports.name, METRICS.intakeRefused.name]
        : [METRICS.batchItems.name, METRICS.batchItemFailures.name];
      expect(stats.map((s) => s.Metric.MetricName).sort()).toEqual([failures, failures, items, items].sort());
      for (const s of stats) {
        const dims = Object.fromEntries(s.Metric.Dimensions.map((d) => [d.Name, d.Value]));
        expect(s.Metric.Namespace).toBe(METRICS.namespace);
        expect(dims).toMatchObject({ service: 'tocsin', environment: 'test', function: { Ref: fn } });
        if ('version' in dims) expect(dims.version).toEqual({ 'Fn::GetAtt': version });
      }
      expect(stats.filter((s) => s.Metric.Dimensions.some((d) => d.Name === 'version'))).toHaveLength(2);
      const expression = (a.Metrics ?? []).find((m) => m.Expression)?.Expression ?? '';
      const min = VERSION_MIN_ITEMS[intake ? 'ingest' : entry === schedule.handler ? 'schedule' : 'consumer'];
      expect(expression).toContain(`>= ${min}`);
      expect(a.Threshold).toBe(VERSION_FAILURE_MARGIN);
      // Assert: it rolls the deployment back, and the alias moves only once it is in place
      expect(alarmIdsOf(groupOf(fn))).toContain(alarmId);
      expect(alias.DependsOn ?? [], aliasId).toContain(alarmId);
    },
  );

  it.each(queues.map((q) => [q.name, q.consumer]))(
    'rolls the %s consumer back when its dead-letter queue grows',
    (name, entry) => {
      const group = groupOf(functionFor(entry));
      const [dlqAlarm] = alarm(`${pascal(name)}DeadLetterQueue`);
      expect(alarmIdsOf(group)).toContain(dlqAlarm);
    },
  );

  it('runs the pre-traffic check before any traffic moves, on every deployment group', () => {
    // Arrange
    const check = functionFor(deployCheck.handler);
    const env = (resources[check].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    const targets = JSON.stringify(env.DEPLOY_CHECK_TARGETS);
    // Assert
    for (const entry of aliasedEntries()) {
      const fn = functionFor(entry);
      const [, alias] = aliasOf(fn);
      const update = alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate as { BeforeAllowTrafficHook: unknown };
      expect(update.BeforeAllowTrafficHook, entry).toEqual({ Ref: check });
      expect(alias.DependsOn ?? []).toContain(check);
      // Which function, at the version this deploy publishes, and how it is called
      expect(targets, entry).toContain(`{"Ref":"${fn}"}`);
    }
    for (const probe of ['report', 'monitors', 'consumer', 'schedule'])
      expect(targets).toContain(`\\"probe\\":\\"${probe}\\"`);
    // It may read the deployment and report on it, invoke those functions' versions, read the check task.
    const statements = statementsOf(check);
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    expect(actions).toEqual(
      expect.arrayContaining([
        'codedeploy:GetDeployment',
        'codedeploy:PutLifecycleEventHookExecutionStatus',
        'lambda:InvokeFunction',
        'dynamodb:GetItem',
        'secretsmanager:GetSecretValue',
      ]),
    );
    const invoke = statements.find((s) => JSON.stringify(s.Action).includes('lambda:InvokeFunction'));
    expect(JSON.stringify(invoke?.Resource)).not.toContain(check);
    expect((invoke?.Resource ?? []) as unknown[]).toHaveLength(aliasedEntries().length);
  });

  it('reserves instances for the alarm consumer and the runner (the due consumer and its dispatcher)', () => {
    const consumerOf = (name: string) => queues.find((q) => q.name === name)!.consumer;
    for (const entry of [consumerOf('alarm'), consumerOf('due'), schedule.handler]) {
      expect(resources[functionFor(entry)].Properties.ReservedConcurrentExecutions, entry).toBeGreaterThan(0);
    }
  });
});

describe('alarms that hold at scale', () => {
  it.each(queues.map((q) => [q.name]))('fire when the %s queue holds too many messages in flight', (name) => {
    const [, a] = alarm(`${pascal(name)}QueueInFlight`);
    expect(a).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesNotVisible',
      Namespace: 'AWS/SQS',
      Threshold: DEFAULT_IN_FLIGHT_MAX[name as QueueName],
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId(name as QueueName), 'QueueName'] } }],
    });
    expect(DEFAULT_IN_FLIGHT_MAX[name as QueueName]).toBeLessThan(120_000 / 10);
  });

  it('fire on the p99 of the pipeline lag, on hand-backs and on a degraded rate limit', () => {
    const [, lag] = alarm('PipelineLag');
    expect(lag).toMatchObject({
      MetricName: METRICS.pipelineLag.name,
      ExtendedStatistic: 'p99',
      Threshold: DEFAULT_PIPELINE_LAG_P99_MS,
    });
    const [, handedBack] = alarm('AlarmsHandedBack');
    expect(handedBack).toMatchObject({
      MetricName: METRICS.alarmsHandedBack.name,
      Threshold: DEFAULT_HANDED_BACK_THRESHOLD,
    });
    const [, degraded] = alarm('RateLimitDegraded');
    expect(degraded).toMatchObject({ MetricName: METRICS.rateLimitDegraded.name, Threshold: 1 });
    for (const a of [lag, handedBack, degraded])
      expect(a.Dimensions).toEqual(
        expect.arrayContaining([
          { Name: 'service', Value: 'tocsin' },
          { Name: 'environment', Value: 'test' },
        ]),
      );
  });

  it("fire on API Gateway's 429s of /alarm/*, counted from the access log", () => {
    // Arrange
    const [[, filter]] = ofType('AWS::Logs::MetricFilter');
    const [[apiId]] = ofType('AWS::ApiGatewayV2::Api');
    const [, a] = alarm('IngestThrottled');
    // Assert
    expect(filter.Properties.FilterPattern).toBe('{ ($.status = "429") && ($.path = "/alarm/*") }');
    expect(filter.Properties.MetricTransformations).toEqual([
      {
        MetricNamespace: METRICS.namespace,
        MetricName: METRICS.ingestThrottled.name,
        MetricValue: '1',
        Dimensions: [{ Key: 'api', Value: '$.apiId' }],
        Unit: 'Count',
      },
    ]);
    expect(a).toMatchObject({
      MetricName: METRICS.ingestThrottled.name,
      Namespace: METRICS.namespace,
      Dimensions: [{ Name: 'api', Value: { Ref: apiId } }],
      Threshold: 1,
    });
  });
});
