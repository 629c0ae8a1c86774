import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { table as tableDef } from '../definitions.ts';
import { METRICS } from '../metrics.ts';
import type { ServiceHttpApi } from './http-api.ts';
import { pascal, type ServiceQueues } from './queues.ts';
import type { ServiceFunctions } from './service-functions.ts';

/** HTTP route functions per error/throttle alarm (CloudWatch lets an alarm's math read 10 metrics). */
const ALARM_GROUP_SIZE = 10;

/** Seconds the oldest alarm-queue message may wait, for five minutes in a row, before the alarm fires. */
export const DEFAULT_ALARM_QUEUE_MAX_AGE_SECONDS = 60;
/** HTTP 5xx answers in five minutes that fire the API alarm (a single one also fires a function alarm). */
export const DEFAULT_API_5XX_THRESHOLD = 5;

export interface ServiceObservabilityProps {
  functions: ServiceFunctions;
  queues: ServiceQueues;
  http: ServiceHttpApi;
  table: dynamodb.ITable;
  /** Subscribed to the alarm topic by e-mail (AWS asks the address to confirm the subscription). */
  alarmEmail?: string;
  alarmQueueMaxAgeSeconds?: number;
  api5xxThreshold?: number;
}

/** What an alarm watches, for tests and the runbook (docs/aws-operations.md). */
export type AlarmKind =
  | 'dead-letter-queue'
  | 'function-errors'
  | 'function-throttles'
  | 'queue-age'
  | 'api-5xx';

/**
 * The operator's view of the service: one SNS topic that every alarm notifies (on ALARM and on OK), the
 * alarms (dead letters, function errors and throttles, alarm-queue age, API 5xx) and one dashboard.
 * The runbook for each alarm is docs/aws-operations.md.
 */
export class ServiceObservability extends Construct {
  readonly topic: sns.Topic;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: { kind: AlarmKind; subject: string; alarm: cloudwatch.Alarm }[] = [];

  constructor(scope: Construct, id: string, props: ServiceObservabilityProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const { functions, queues, http } = props;

    this.topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `tocsin ${stack.stackName} alarms`,
      enforceSSL: true,
    });
    // The SSL policy replaces the topic's default policy: allow CloudWatch alarms of this account only.
    this.topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:*`,
          },
        },
      }),
    );
    if (props.alarmEmail !== undefined) {
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(props.alarmEmail))
        throw new Error(`alarmEmail: not an e-mail address: ${props.alarmEmail}`);
      this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    }
    const action = new SnsAction(this.topic);

    const alarm = (
      kind: AlarmKind,
      subject: string,
      options: Omit<cloudwatch.AlarmProps, 'comparisonOperator' | 'treatMissingData' | 'alarmName'>,
    ) => {
      const name = `${pascal(subject)}${pascal(kind)}`;
      const created = new cloudwatch.Alarm(this, name, {
        alarmName: `${stack.stackName}-${name}`,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No data is no trouble: idle functions report no errors, idle queues stop reporting.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        ...options,
        alarmDescription: `${options.alarmDescription} Runbook: docs/aws-operations.md, "${kind}".`,
      });
      created.addAlarmAction(action);
      created.addOkAction(action);
      this.alarms.push({ kind, subject, alarm: created });
      return created;
    };

    const minute = Duration.minutes(1);
    const fiveMinutes = Duration.minutes(5);

    for (const { def, deadLetterQueue } of queues.all) {
      alarm('dead-letter-queue', def.name, {
        metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: 'Maximum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        alarmDescription: `Messages of the ${def.name} queue gave up after ${def.maxReceiveCount} receives.`,
      });
    }

    const alarmQueue = queues.byName.alarm.queue;
    const maxAge = props.alarmQueueMaxAgeSeconds ?? DEFAULT_ALARM_QUEUE_MAX_AGE_SECONDS;
    alarm('queue-age', 'alarm', {
      metric: alarmQueue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum' }),
      threshold: maxAge,
      evaluationPeriods: 5,
      datapointsToAlarm: 5,
      alarmDescription: `Alarms have waited ${maxAge} s or more in the alarm queue for 5 minutes.`,
    });

    // The alarm intake routes, the consumers and the scheduled run have alarms of their own; the other
    // HTTP routes share theirs, ten functions to an alarm (the metrics one alarm's math may read): an
    // alarm per function would put the stack past CloudFormation's 500 resources. The description
    // names the group's functions; the dashboard's per-function graphs tell which one.
    const own = functions.functions.filter((fn) => functions.kinds.get(fn) !== 'http');
    const routeFns = functions.functions.filter((fn) => functions.kinds.get(fn) === 'http');
    const groups = [
      ...own.map((fn) => ({ label: fn.node.id, fns: [fn] })),
      ...Array.from({ length: Math.ceil(routeFns.length / ALARM_GROUP_SIZE) }, (_, i) => ({
        label: `HttpRoutes${i + 1}`,
        fns: routeFns.slice(i * ALARM_GROUP_SIZE, (i + 1) * ALARM_GROUP_SIZE),
      })),
    ];
    const sum = (fns: lambda.IFunction[], metric: (fn: lambda.IFunction) => cloudwatch.Metric) =>
      fns.length === 1
        ? metric(fns[0])
        : new cloudwatch.MathExpression({
            expression: `SUM([${fns.map((_, i) => `m${i}`).join(',')}])`,
            usingMetrics: Object.fromEntries(fns.map((fn, i) => [`m${i}`, metric(fn)])),
            period: fiveMinutes,
          });
    for (const { label, fns } of groups) {
      const names =
        fns.length === 1
          ? `Function ${label}`
          : `One of the functions ${fns.map((f) => f.node.id).join(', ')}`;
      alarm('function-errors', label, {
        metric: sum(fns, (fn) => fn.metricErrors({ period: fiveMinutes, statistic: 'Sum' })),
        threshold: 1,
        evaluationPeriods: 1,
        alarmDescription: `${names} failed an invocation.`,
      });
      alarm('function-throttles', label, {
        metric: sum(fns, (fn) => fn.metricThrottles({ period: fiveMinutes, statistic: 'Sum' })),
        threshold: 1,
        evaluationPeriods: 1,
        alarmDescription: `Lambda throttled ${names.charAt(0).toLowerCase()}${names.slice(1)} (concurrency exhausted).`,
      });
    }

    const api5xx = props.api5xxThreshold ?? DEFAULT_API_5XX_THRESHOLD;
    alarm('api-5xx', 'http', {
      metric: http.api.metricServerError({ period: fiveMinutes, statistic: 'Sum' }),
      threshold: api5xx,
      evaluationPeriods: 1,
      alarmDescription: `The HTTP API answered ${api5xx} or more 5xx in 5 minutes.`,
    });

    this.dashboard = this.createDashboard(props);
  }

  private createDashboard({
    functions,
    queues,
    http,
    table,
  }: ServiceObservabilityProps): cloudwatch.Dashboard {
    const stack = Stack.of(this);
    const period = Duration.minutes(5);
    const api = http.api;
    const wide = (
      title: string,
      left: cloudwatch.IMetric[],
      extra: Partial<cloudwatch.GraphWidgetProps> = {},
    ) => new cloudwatch.GraphWidget({ title, left, width: 8, height: 6, period, ...extra });
    /**
     * Every series of a custom metric, one per dimension value the code writes (`code`, `outcome`,
     * `channel`), each labelled with its dimension values after `prefix`.
     */
    const search = (name: string, statistic: string, prefix = '') =>
      new cloudwatch.SearchExpression({
        expression: `SEARCH('Namespace="${METRICS.namespace}" MetricName="${name}"', '${statistic}', ${period.toSeconds()})`,
        label: prefix,
        period,
      });
    const perFunction = (
      title: string,
      metric: (fn: (typeof functions.functions)[number]) => cloudwatch.IMetric,
    ) =>
      wide(
        title,
        functions.functions.map((fn) => metric(fn)),
        { legendPosition: cloudwatch.LegendPosition.RIGHT, width: 24 },
      );
    const gsi = tableDef.globalSecondaryIndexes.map((g) => g.indexName);
    const dynamo = (metricName: string, index?: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName,
        dimensionsMap: { TableName: table.tableName, ...(index ? { GlobalSecondaryIndexName: index } : {}) },
        statistic: 'Sum',
        period,
        label: index ? `${metricName} ${index}` : metricName,
      });

    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: stack.stackName,
      defaultInterval: Duration.hours(3),
    });
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# ${stack.stackName}\nAlarms notify the stack's AlarmTopicArn; what to do when one fires: docs/aws-operations.md.`,
        width: 24,
        height: 2,
      }),
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: this.alarms.map((a) => a.alarm),
        width: 24,
        height: 4,
      }),
    );
    dashboard.addWidgets(
      wide('API requests', [api.metricCount({ statistic: 'Sum', period, label: 'requests' })]),
      wide('API latency (ms)', [
        api.metricLatency({ statistic: 'p50', period, label: 'latency p50' }),
        api.metricLatency({ statistic: 'p99', period, label: 'latency p99' }),
        api.metricIntegrationLatency({ statistic: 'p99', period, label: 'integration p99' }),
      ]),
      wide('API 4xx / 5xx', [
        api.metricClientError({ statistic: 'Sum', period, label: '4xx' }),
        api.metricServerError({ statistic: 'Sum', period, label: '5xx' }),
      ]),
    );
    dashboard.addWidgets(
      wide('Alarms accepted', [search(METRICS.alarmsAccepted.name, 'Sum')]),
      wide('Alarms refused by code', [search(METRICS.alarmsRefused.name, 'Sum')]),
      wide('Pipeline outcome', [search(METRICS.pipelineOutcome.name, 'Sum')]),
    );
    dashboard.addWidgets(
      wide('Webhook deliveries by outcome', [search(METRICS.webhookDelivery.name, 'Sum')]),
      wide('Webhook latency (ms)', [
        search(METRICS.webhookLatency.name, 'p50', 'p50'),
        search(METRICS.webhookLatency.name, 'p99', 'p99'),
      ]),
      wide('Channel deliveries by channel and outcome', [search(METRICS.channelDelivery.name, 'Sum')]),
    );
    dashboard.addWidgets(
      wide(
        'Queue depth (visible)',
        queues.all.map(({ def, queue }) =>
          queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period, label: def.name }),
        ),
      ),
      wide(
        'Oldest message age (s)',
        queues.all.map(({ def, queue }) =>
          queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period, label: def.name }),
        ),
      ),
      wide(
        'Dead-letter queue depth',
        queues.all.map(({ def, deadLetterQueue }) =>
          deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            statistic: 'Maximum',
            period,
            label: `${def.name} DLQ`,
          }),
        ),
        { leftAnnotations: [{ value: 1, label: 'alarm', color: cloudwatch.Color.RED }] },
      ),
    );
    dashboard.addWidgets(
      perFunction('Lambda errors', (fn) => fn.metricErrors({ statistic: 'Sum', period, label: fn.node.id })),
    );
    dashboard.addWidgets(
      perFunction('Lambda throttles', (fn) =>
        fn.metricThrottles({ statistic: 'Sum', period, label: fn.node.id }),
      ),
    );
    dashboard.addWidgets(
      perFunction('Lambda duration p99 (ms)', (fn) =>
        fn.metricDuration({ statistic: 'p99', period, label: fn.node.id }),
      ),
    );
    dashboard.addWidgets(
      wide('DynamoDB consumed capacity', [
        dynamo('ConsumedReadCapacityUnits'),
        dynamo('ConsumedWriteCapacityUnits'),
        ...gsi.flatMap((g) => [
          dynamo('ConsumedReadCapacityUnits', g),
          dynamo('ConsumedWriteCapacityUnits', g),
        ]),
      ]),
      wide('DynamoDB throttle events', [
        dynamo('ReadThrottleEvents'),
        dynamo('WriteThrottleEvents'),
        ...gsi.flatMap((g) => [dynamo('ReadThrottleEvents', g), dynamo('WriteThrottleEvents', g)]),
      ]),
      wide('DynamoDB errors', [
        table.metricSystemErrorsForOperations({ statistic: 'Sum', period, label: 'system errors' }),
        dynamo('TransactionConflict'),
      ]),
    );
    return dashboard;
  }
}
