import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { table as tableDef } from '../../shared/contracts/table.ts';
import { METRICS } from '../../shared/contracts/metrics.ts';
import type { ServiceHttpApi } from './http-api.ts';
import type { ServiceQueues } from './queues.ts';
import type { ServiceFunctions } from './service-functions.ts';

export interface ServiceDashboardProps {
  functions: ServiceFunctions;
  queues: ServiceQueues;
  http: ServiceHttpApi;
  table: dynamodb.ITable;
  /** The `environment` dimension of the custom metrics: the dashboard shows this stack's only. */
  envName: string;
  alarms: cloudwatch.IAlarm[];
}

/**
 * Outcomes of a notification attempt (ChannelDelivery's `outcome`), as the people path graphs them:
 * sent, failed (the provider refused it, failed, or throttled it: retried or given up) and skipped
 * (no receiver, channel not configured).
 */
export const CHANNEL_OUTCOMES = {
  sent: ['delivered'],
  failed: ['failed', 'rejected', 'throttled', 'rate_limited'],
  skipped: ['skipped'],
} as const;

/**
 * One CloudWatch dashboard per stack: alarm status, the API, the alarm path beside the people path
 * (alarms accepted and decided, the alarm queue; notifications sent, failed and skipped per channel,
 * the notify queue), deliveries, queues, functions and the table (docs/aws-operations.md, "Dashboard").
 */
export function serviceDashboard(scope: Construct, props: ServiceDashboardProps): cloudwatch.Dashboard {
  const { functions, queues, http, table } = props;
  const stack = Stack.of(scope);
  const period = Duration.minutes(5);
  const api = http.api;
  const graph = (
    title: string,
    left: cloudwatch.IMetric[],
    extra: Partial<cloudwatch.GraphWidgetProps> = {},
  ) => new cloudwatch.GraphWidget({ title, left, width: 8, height: 6, period, ...extra });
  const quarter = (
    title: string,
    left: cloudwatch.IMetric[],
    extra: Partial<cloudwatch.GraphWidgetProps> = {},
  ) => graph(title, left, { width: 6, ...extra });
  /**
   * Every series of a custom metric of this stack's environment, one per dimension value the code writes
   * (`code`, `outcome`, `channel`), each labelled with its dimension values after `prefix`; `filter`
   * narrows the search (e.g. to some outcomes).
   */
  const search = (name: string, statistic: string, prefix = '', filter = '') =>
    new cloudwatch.SearchExpression({
      expression: `SEARCH('Namespace="${METRICS.namespace}" MetricName="${name}" ${METRICS.environmentDimension}="${props.envName}"${filter ? ` ${filter}` : ''}', '${statistic}', ${period.toSeconds()})`,
      label: prefix,
      period,
    });
  const channelOutcomes = (outcomes: readonly string[]) =>
    search(
      METRICS.channelDelivery.name,
      'Sum',
      '',
      `(${outcomes.map((o) => `outcome="${o}"`).join(' OR ')})`,
    );
  const queueGraph = (title: string, name: keyof typeof queues.byName) => {
    const { queue, deadLetterQueue } = queues.byName[name];
    return quarter(
      title,
      [
        queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period, label: 'visible' }),
        deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          statistic: 'Maximum',
          period,
          label: 'dead letters',
        }),
      ],
      {
        right: [
          queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period, label: 'oldest (s)' }),
        ],
      },
    );
  };
  const perFunction = (
    title: string,
    metric: (fn: (typeof functions.functions)[number]) => cloudwatch.IMetric,
  ) =>
    graph(
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

  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: stack.stackName,
    defaultInterval: Duration.hours(3),
  });
  dashboard.addWidgets(
    new cloudwatch.TextWidget({
      markdown: `# ${stack.stackName}\nAlarms notify the stack's AlarmTopicArn; what to do when one fires: docs/aws-operations.md.`,
      width: 24,
      height: 2,
    }),
    new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: props.alarms, width: 24, height: 4 }),
  );
  dashboard.addWidgets(
    graph('API requests', [api.metricCount({ statistic: 'Sum', period, label: 'requests' })]),
    graph('API latency (ms)', [
      api.metricLatency({ statistic: 'p50', period, label: 'latency p50' }),
      api.metricLatency({ statistic: 'p99', period, label: 'latency p99' }),
      api.metricIntegrationLatency({ statistic: 'p99', period, label: 'integration p99' }),
    ]),
    graph('API 4xx / 5xx', [
      api.metricClientError({ statistic: 'Sum', period, label: '4xx' }),
      api.metricServerError({ statistic: 'Sum', period, label: '5xx' }),
    ]),
  );
  // The alarm path and, right below it, the people path: what came in, and whom it reached.
  dashboard.addWidgets(
    quarter('Alarm path: alarms accepted', [search(METRICS.alarmsAccepted.name, 'Sum')]),
    quarter('Alarm path: pipeline outcome', [search(METRICS.pipelineOutcome.name, 'Sum')]),
    quarter('Alarm path: alarms refused by code', [search(METRICS.alarmsRefused.name, 'Sum')]),
    queueGraph('Alarm path: alarm queue', 'alarm'),
  );
  dashboard.addWidgets(
    quarter('People path: notifications sent by channel', [channelOutcomes(CHANNEL_OUTCOMES.sent)]),
    quarter('People path: notifications failed by channel', [channelOutcomes(CHANNEL_OUTCOMES.failed)]),
    quarter('People path: notifications skipped by channel', [channelOutcomes(CHANNEL_OUTCOMES.skipped)]),
    queueGraph('People path: notify queue', 'notify'),
  );
  dashboard.addWidgets(
    graph('Webhook deliveries by outcome', [search(METRICS.webhookDelivery.name, 'Sum')]),
    graph('Webhook latency (ms)', [
      search(METRICS.webhookLatency.name, 'p50', 'p50'),
      search(METRICS.webhookLatency.name, 'p99', 'p99'),
    ]),
    graph('Channel deliveries by channel and outcome', [search(METRICS.channelDelivery.name, 'Sum')]),
  );
  dashboard.addWidgets(graph('Sign-in and credential events', [search(METRICS.authEvents.name, 'Sum')]));
  dashboard.addWidgets(
    graph(
      'Queue depth (visible)',
      queues.all.map(({ def, queue }) =>
        queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period, label: def.name }),
      ),
    ),
    graph(
      'Oldest message age (s)',
      queues.all.map(({ def, queue }) =>
        queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period, label: def.name }),
      ),
    ),
    graph(
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
    graph('DynamoDB consumed capacity', [
      dynamo('ConsumedReadCapacityUnits'),
      dynamo('ConsumedWriteCapacityUnits'),
      ...gsi.flatMap((g) => [
        dynamo('ConsumedReadCapacityUnits', g),
        dynamo('ConsumedWriteCapacityUnits', g),
      ]),
    ]),
    graph('DynamoDB throttle events', [
      dynamo('ReadThrottleEvents'),
      dynamo('WriteThrottleEvents'),
      ...gsi.flatMap((g) => [dynamo('ReadThrottleEvents', g), dynamo('WriteThrottleEvents', g)]),
    ]),
    graph('DynamoDB errors', [
      table.metricSystemErrorsForOperations({ statistic: 'Sum', period, label: 'system errors' }),
      dynamo('TransactionConflict'),
    ]),
  );
  return dashboard;
}
