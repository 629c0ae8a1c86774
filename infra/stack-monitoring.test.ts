import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { deployedRoutes } from './constructs/http-api.ts';
import { pascal } from './constructs/queues.ts';
import { DEAD_LETTER_ALARM_MINUTES } from './constructs/observability.ts';
import type { QueueName } from '../shared/contracts/messages.ts';
import { deployCheck, queues, schedule } from './consumers.ts';
import { routeEntry } from './definitions.ts';
import { METRICS } from '../shared/contracts/metrics.ts';
import {
  functionFor,
  functionOfRoute,
  functionSpecs,
  ofType,
  outputs,
  queueId,
  refOfOutput,
  resources,
  synth,
  SYNTH_TIMEOUT_MS,
  synthOnce,
  tableId,
  template,
} from './test-stack.ts';

beforeAll(synthOnce, SYNTH_TIMEOUT_MS);

describe('alarms', () => {
  type AlarmProps = {
    MetricName: string;
    Namespace: string;
    Dimensions: { Name: string; Value: unknown }[];
    Threshold: number;
    ComparisonOperator: string;
    EvaluationPeriods: number;
    DatapointsToAlarm?: number;
    Period: number;
    Statistic: string;
    AlarmActions: unknown[];
    OKActions: unknown[];
    TreatMissingData: string;
  };
  const alarms = () =>
    ofType('AWS::CloudWatch::Alarm').map(([id, a]) => ({ id, ...(a.Properties as AlarmProps) }));
  const topicId = () => refOfOutput('AlarmTopicArn');
  /** The alarms on a metric whose (first) dimension is `value`. */
  const on = (namespace: string, metricName: string, value: unknown) =>
    alarms().filter(
      (a) =>
        a.Namespace === namespace &&
        a.MetricName === metricName &&
        JSON.stringify(a.Dimensions[0]?.Value) === JSON.stringify(value),
    );

  it('notify the stack topic on ALARM and on OK, every one of them', () => {
    expect(resources[topicId()].Type).toBe('AWS::SNS::Topic');
    for (const a of alarms()) {
      expect(a.AlarmActions, a.id).toEqual([{ Ref: topicId() }]);
      expect(a.OKActions, a.id).toEqual([{ Ref: topicId() }]);
      // The one alarm on something that stops: the schedule (its runs missing is the trouble).
      const stopped = a.MetricName === 'Invocations';
      expect(a.ComparisonOperator, a.id).toBe(
        stopped ? 'LessThanThreshold' : 'GreaterThanOrEqualToThreshold',
      );
      expect(a.TreatMissingData, a.id).toBe(stopped ? 'breaching' : 'notBreaching');
    }
  });

  it.each(queues.map((q) => [q.name]))(
    'fire when the %s dead-letter queue grows (visible and hidden together), not on its depth',
    (name) => {
      // Arrange
      const dlq = refOfOutput(`${pascal(name as QueueName)}DeadLetterQueueUrl`);
      type Metric = { Id: string; Expression?: string; ReturnData?: boolean; MetricStat?: MetricStat };
      type MetricStat = { Metric: { MetricName: string; Dimensions: { Value: unknown }[] }; Stat: string };
      const found = alarms().filter((a) =>
        ((a as unknown as { Metrics?: Metric[] }).Metrics ?? []).some(
          (m) =>
            JSON.stringify(m.MetricStat?.Metric.Dimensions[0]?.Value) ===
            JSON.stringify({ 'Fn::GetAtt': [dlq, 'QueueName'] }),
        ),
      );
      // Assert
      expect(found).toHaveLength(1);
      const metrics = (found[0] as unknown as { Metrics: Metric[] }).Metrics;
      const top = metrics.find((m) => m.ReturnData !== false);
      expect(top?.Expression).toMatch(/^DIFF\(\w+\)$/);
      const depth = metrics.find((m) => m.Id === /^DIFF\((\w+)\)$/.exec(top?.Expression ?? '')?.[1]);
      expect(depth?.Expression).toMatch(/FILL\(\w+, 0\) \+ FILL\(\w+, 0\)/);
      expect(
        metrics
          .map((m) => m.MetricStat?.Metric.MetricName)
          .filter(Boolean)
          .sort(),
      ).toEqual(['ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesVisible']);
      expect(found[0]).toMatchObject({
        Threshold: 1,
        EvaluationPeriods: DEAD_LETTER_ALARM_MINUTES,
        DatapointsToAlarm: 1,
      });
    },
  );

  it('fire on any error or throttle of every function (HTTP routes ten to an alarm, the others alone)', () => {
    // The pre-traffic check aside: its failure fails the deployment it checks.
    const check = functionFor(deployCheck.handler);
    const fns = ofType('AWS::Lambda::Function')
      .map(([id]) => id)
      .filter((id) => id !== check);
    expect(fns).toHaveLength(functionSpecs().length - 1);
    type MathAlarm = {
      Metrics?: {
        Id: string;
        Expression?: string;
        MetricStat?: { Metric: { MetricName: string; Dimensions: { Value: unknown }[] }; Stat: string };
      }[];
    };
    const inMath = (metric: string, id: string) =>
      alarms().filter((a) =>
        ((a as unknown as MathAlarm).Metrics ?? []).some(
          (m) =>
            m.MetricStat?.Metric.MetricName === metric &&
            m.MetricStat.Stat === 'Sum' &&
            JSON.stringify(m.MetricStat.Metric.Dimensions[0]?.Value) === JSON.stringify({ Ref: id }),
        ),
      );
    for (const id of fns) {
      for (const metric of ['Errors', 'Throttles']) {
        const direct = on('AWS/Lambda', metric, { Ref: id });
        const grouped = inMath(metric, id);
        expect(direct.length + grouped.length, `${id} ${metric}`).toBe(1);
        const a = direct[0] ?? grouped[0];
        expect(a, `${id} ${metric}`).toMatchObject({ Threshold: 1, EvaluationPeriods: 1 });
        if (direct[0]) expect(direct[0].Statistic).toBe('Sum');
        else {
          const math = (a as unknown as MathAlarm).Metrics ?? [];
          expect(math.length).toBeLessThanOrEqual(11);
          expect(math.find((m) => m.Expression)?.Expression).toMatch(/^SUM\(\[m\d+(,m\d+)*\]\)$/);
        }
      }
    }
    // The ingestion route and the queue and schedule functions are never grouped.
    for (const id of [
      functionOfRoute('POST /alarm/report'),
      ...[...queues.map((q) => q.consumer), schedule.handler].map(functionFor),
    ]) {
      expect(on('AWS/Lambda', 'Errors', { Ref: id }), id).toHaveLength(1);
    }
  });

  it('fire when alarms wait 60 s or more in the alarm queue for 5 minutes', () => {
    const found = on('AWS/SQS', 'ApproximateAgeOfOldestMessage', {
      'Fn::GetAtt': [queueId('alarm'), 'QueueName'],
    });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      Threshold: 60,
      Period: 60,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 5,
      Statistic: 'Maximum',
    });
  });

  it('fire on 5xx answers of the HTTP API', () => {
    const [[apiId]] = ofType('AWS::ApiGatewayV2::Api');
    const found = on('AWS/ApiGateway', '5xx', { Ref: apiId });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ Threshold: 5, Statistic: 'Sum', Period: 300 });
  });

  it('fire on a deployment-wide spike of failed sign-ins (50 in 5 minutes)', () => {
    const found = alarms().filter((a) => a.Namespace === 'Tocsin' && a.MetricName === 'AuthEvents');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ Threshold: 50, Statistic: 'Sum', Period: 300, EvaluationPeriods: 1 });
    expect(found[0].Dimensions).toEqual(
      expect.arrayContaining([
        { Name: 'service', Value: 'tocsin' },
        { Name: 'environment', Value: expect.any(String) },
        { Name: 'event', Value: 'signin-failed' },
      ]),
    );
    expect(found[0].Dimensions).toHaveLength(3);
  });

  it('are exactly those, and the ones of infra/ops.test.ts', () => {
    // Grouped: the functions of the routes that do not take alarms (a function group's routes share
    // one), and $default; alone: alarm intake, queues, schedule.
    const app =
      new Set(
        deployedRoutes()
          .filter((r) => r.auth !== 'alarm')
          .map(routeEntry),
      ).size + 1;
    // The pre-traffic check has none.
    const alone = ofType('AWS::Lambda::Function').length - app - 1;
    // Versions deployed gradually: the intake functions, the consumers, the runner.
    const versions = ofType('AWS::Lambda::Alias').length;
    const intake = new Set(
      deployedRoutes()
        .filter((r) => r.auth === 'alarm')
        .map(routeEntry),
    ).size;
    expect(versions).toBe(intake + queues.length + 1);
    // DLQs, queue ages and in-flight counts; errors and throttles; API 5xx and 429s on /alarm/*; table
    // throttles and errors; AlarmLogLost, DueWorkBuried, sign-in failures, hand-backs, pipeline lag, a
    // degraded rate limit; the schedule; each gradually deployed function's version.
    expect(alarms()).toHaveLength(
      3 * queues.length + 2 * (alone + Math.ceil(app / 10)) + 2 + 2 + 6 + 1 + versions,
    );
  });
});

describe('alarm topic', () => {
  const topicId = () => refOfOutput('AlarmTopicArn');

  it('refuses plain HTTP and lets only this account’s CloudWatch alarms publish', () => {
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId() }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': '123456789012' } }),
          }),
        ]),
      },
    });
  });

  it('has an e-mail subscription only when alarmEmail is given', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Arrange / Act
    const withEmail = synth({ alarmEmail: 'ops@example.com' });
    // Assert
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    withEmail.resourceCountIs('AWS::SNS::Subscription', 1);
    withEmail.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
    expect(() => synth({ alarmEmail: 'not an address' })).toThrow(/alarmEmail/);
  });
});

describe('dashboard', () => {
  it('graphs the API, ingestion, deliveries, queues, functions and the table', () => {
    // Arrange
    const dashboards = ofType('AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0][1].Properties.DashboardBody);
    // Assert: sections
    for (const title of [
      'API requests',
      'API latency',
      'API 4xx / 5xx',
      'Alarms refused by code',
      'Pipeline outcome',
      'Webhook deliveries by outcome',
      'Webhook latency',
      'Channel deliveries',
      'Queue depth',
      'Oldest message age',
      'Dead-letter queue depth',
      'Lambda errors',
      'Lambda throttles',
      'Lambda duration',
      'DynamoDB consumed capacity',
      'DynamoDB throttle events',
    ]) {
      expect(body.toLowerCase(), title).toContain(title.toLowerCase());
    }
    // Assert: the custom metrics of shared/contracts/metrics.ts, every function, queue and DLQ, and the table
    for (const key of [
      'alarmsAccepted',
      'alarmsRefused',
      'pipelineOutcome',
      'webhookDelivery',
      'webhookLatency',
      'channelDelivery',
      'authEvents',
    ] as const) {
      expect(body, key).toContain(
        `Namespace=\\\\\\"Tocsin\\\\\\" MetricName=\\\\\\"${METRICS[key].name}\\\\\\"`,
      );
    }
    const check = functionFor(deployCheck.handler);
    for (const [id] of ofType('AWS::Lambda::Function'))
      if (id !== check) expect(body, id).toContain(`"Ref":"${id}"`);
    for (const q of queues) {
      expect(body).toContain(`"${queueId(q.name)}","QueueName"`);
      expect(body).toContain(`"${refOfOutput(`${pascal(q.name)}DeadLetterQueueUrl`)}","QueueName"`);
    }
    expect(body).toContain(`"Ref":"${tableId()}"`);
    expect(outputs.DashboardName.Value).toEqual({ Ref: dashboards[0][0] });
  });
});
