import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { QueueName } from '../../shared/contracts/messages.ts';
import { table as tableDef } from '../../shared/contracts/table.ts';
import { METRICS } from '../../shared/contracts/metrics.ts';
import { serviceDashboard } from './dashboard.ts';
import type { ServiceHttpApi } from './http-api.ts';
import { pascal, type ServiceQueues } from './queues.ts';
import type { ServiceFunctions } from './service-functions.ts';

/** HTTP route functions per error/throttle alarm (CloudWatch lets an alarm's math read 10 metrics). */
const ALARM_GROUP_SIZE = 10;

/**
 * Seconds the oldest message of a queue may wait, five minutes in a row, before its alarm fires. The
 * alarm queue holds accepted alarms: a minute is late. Webhook and notify messages wait for retries
 * with backoff (5 s, 30 s, 120 s, ...), and SQS keeps counting a retried message in this metric until
 * its third receive, so their thresholds leave room for that: 15 minutes for webhooks (a receiver that
 * is down delays only its own task), 5 minutes for people's notifications. Due work is queued as it
 * falls due: 5 minutes late is late. A what-if replay takes up to a few minutes and two run at once:
 * 15 minutes.
 */
export const DEFAULT_QUEUE_MAX_AGE_SECONDS: Record<QueueName, number> = {
  alarm: 60,
  webhook: 900,
  notify: 300,
  due: 300,
  replay: 900,
};

/** The table's operations the service calls (the system-errors alarm reads one metric per operation). */
export const TABLE_OPERATIONS = [
  dynamodb.Operation.GET_ITEM,
  dynamodb.Operation.PUT_ITEM,
  dynamodb.Operation.UPDATE_ITEM,
  dynamodb.Operation.DELETE_ITEM,
  dynamodb.Operation.QUERY,
  dynamodb.Operation.SCAN,
  dynamodb.Operation.BATCH_GET_ITEM,
  dynamodb.Operation.BATCH_WRITE_ITEM,
  dynamodb.Operation.TRANSACT_WRITE_ITEMS,
  dynamodb.Operation.BATCH_EXECUTE_STATEMENT,
];

/**
 * Messages in flight (received and not yet deleted, or hidden) in a queue, three minutes in a row,
 * that fire its alarm: far above what the consumers hold at their caps (10 batches of 25 alarms, 20,
 * 5 and 20 batches of 10), far below SQS's 120,000, past which no consumer of the queue receives anything.
 * Retries wait as delayed messages, not in flight, so a count that grows means messages are held. A
 * replay is one message that runs for minutes: a hundred at once are replays piling up, not working.
 */
export const DEFAULT_IN_FLIGHT_MAX: Record<QueueName, number> = {
  alarm: 2_000,
  webhook: 2_000,
  notify: 2_000,
  due: 2_000,
  replay: 100,
};

/** p99 of `PipelineLagMs` (report to processed) over five minutes that fires the lag alarm. */
export const DEFAULT_PIPELINE_LAG_P99_MS = 10_000;
/** Alarms handed back in five minutes that fire its alarm (a hot metric that keeps losing commits). */
export const DEFAULT_HANDED_BACK_THRESHOLD = 100;
/** Minutes a dead-letter queue alarm stays in ALARM after the queue last grew. */
export const DEAD_LETTER_ALARM_MINUTES = 15;

/** Minutes without a run of the due-work schedule before its alarm fires. */
export const SCHEDULE_SILENCE_MINUTES = 10;
/** HTTP 5xx answers in five minutes that fire the API alarm (a single one also fires a function alarm). */
export const DEFAULT_API_5XX_THRESHOLD = 5;
/**
 * Failed sign-ins in five minutes, deployment-wide (every account, address and method), that fire the
 * sign-in alarm: far above people mistyping, well below a guessing or spraying run (the lockout's
 * limits stop each account and address; this tells the operator one is going on).
 */
export const DEFAULT_SIGNIN_FAILURE_THRESHOLD = 50;

export interface ServiceObservabilityProps {
  functions: ServiceFunctions;
  queues: ServiceQueues;
  http: ServiceHttpApi;
  table: dynamodb.ITable;
  /** The scheduled due-work function: a stopped schedule alarms. */
  runner: lambda.IFunction;
  /** The `environment` dimension of the custom metrics (the stack's envName). */
  envName: string;
  /** Subscribed to the alarm topic by e-mail (AWS asks the address to confirm the subscription). */
  alarmEmail?: string;
  /** An existing topic to notify instead of creating one (its policy must let CloudWatch publish). */
  alarmTopicArn?: string;
  queueMaxAgeSeconds?: Partial<Record<QueueName, number>>;
  inFlightMax?: Partial<Record<QueueName, number>>;
  api5xxThreshold?: number;
  signInFailureThreshold?: number;
}

/** What an alarm watches, for tests and the runbook (docs/aws-operations.md). */
export type AlarmKind =
  | 'dead-letter-queue'
  | 'function-errors'
  | 'function-throttles'
  | 'queue-age'
  | 'queue-in-flight'
  | 'api-5xx'
  | 'ingest-throttled'
  | 'table-throttles'
  | 'table-errors'
  | 'alarm-log-lost'
  | 'due-work-buried'
  | 'sign-in-failures'
  | 'schedule-stopped'
  | 'pipeline-lag'
  | 'alarms-handed-back'
  | 'rate-limit-degraded'
  | 'version-refusals'
  | 'version-failures';

/**
 * The operator's view of the service: one SNS topic that every alarm notifies (on ALARM and on OK), the
 * alarms (dead letters, queue ages, function errors and throttles, API 5xx, table throttles and system
 * errors, lost alarm log entries, buried due work, a stopped schedule) and one dashboard. The runbook
 * for each alarm kind is docs/aws-operations.md.
 */
export class ServiceObservability extends Construct {
  readonly topic: sns.ITopic;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: { kind: AlarmKind; subject: string; alarm: cloudwatch.Alarm }[] = [];
  /**
   * Adds an alarm of `kind` on `subject`, named `<stack>-<Subject><Kind>`, notifying the topic on
   * ALARM and OK (the gradual deployments add their versions' alarms with it).
   */
  readonly addAlarm: AlarmFactory;

  constructor(scope: Construct, id: string, props: ServiceObservabilityProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.topic = props.alarmTopicArn
      ? sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn)
      : this.createTopic();
    if (props.alarmEmail !== undefined) {
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(props.alarmEmail))
        throw new Error(`alarmEmail: not an e-mail address: ${props.alarmEmail}`);
      this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    }
    const action = new SnsAction(this.topic);

    const alarm: AlarmFactory = (kind, subject, options) => {
      // `AlarmQueueAge`, `RunDueWorkFunctionErrors`; a kind named after its subject once: `TableThrottles`.
      const name = kind.startsWith(`${subject}-`) ? pascal(kind) : `${pascal(subject)}${pascal(kind)}`;
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
    this.addAlarm = alarm;
    this.addAlarms(props, alarm);
    this.dashboard = serviceDashboard(this, {
      ...props,
      alarms: this.alarms.map((a) => a.alarm),
    });
  }

  /** The alarm of `kind` on `subject` (a queue name, a function's construct id, `http`, `table`). */
  alarmOf(kind: AlarmKind, subject: string): cloudwatch.Alarm {
    const found = this.alarms.find((a) => a.kind === kind && a.subject === subject);
    if (!found) throw new Error(`no ${kind} alarm on ${subject}`);
    return found.alarm;
  }

  private createTopic(): sns.Topic {
    const stack = Stack.of(this);
    const topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `tocsin ${stack.stackName} alarms`,
      enforceSSL: true,
    });
    // The SSL policy replaces the topic's default policy: allow CloudWatch alarms of this account only.
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:*`,
          },
        },
      }),
    );
    return topic;
  }

  private addAlarms(props: ServiceObservabilityProps, alarm: AlarmFactory): void {
    const { functions, queues, http, table } = props;
    const minute = Duration.minutes(1);
    const fiveMinutes = Duration.minutes(5);

    // On an increase, not on the depth: a dead letter nobody has redriven yet must not hold the alarm
    // in ALARM (and roll back every deployment of the consumer). Visible and hidden together, so that a
    // listing (which receives and releases them) moves nothing.
    for (const { def, deadLetterQueue } of queues.all) {
      const depth = new cloudwatch.MathExpression({
        expression: 'FILL(visible, 0) + FILL(hidden, 0)',
        usingMetrics: {
          visible: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period: minute,
            statistic: 'Maximum',
          }),
          hidden: deadLetterQueue.metricApproximateNumberOfMessagesNotVisible({
            period: minute,
            statistic: 'Maximum',
          }),
        },
        period: minute,
      });
      alarm('dead-letter-queue', def.name, {
        metric: new cloudwatch.MathExpression({
          expression: 'DIFF(depth)',
          usingMetrics: { depth },
          period: minute,
          label: `${def.name} dead letters added`,
        }),
        threshold: 1,
        evaluationPeriods: DEAD_LETTER_ALARM_MINUTES,
        datapointsToAlarm: 1,
        alarmDescription:
          `Messages of the ${def.name} queue gave up after their attempts and moved to its dead-letter queue ` +
          `(within the last ${DEAD_LETTER_ALARM_MINUTES} minutes).`,
      });
    }

    for (const { def, queue } of queues.all) {
      const most = props.inFlightMax?.[def.name] ?? DEFAULT_IN_FLIGHT_MAX[def.name];
      alarm('queue-in-flight', def.name, {
        metric: queue.metricApproximateNumberOfMessagesNotVisible({ period: minute, statistic: 'Maximum' }),
        threshold: most,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        alarmDescription: `${most} or more messages of the ${def.name} queue have been in flight for 3 minutes.`,
      });
    }

    for (const { def, queue } of queues.all) {
      const maxAge = props.queueMaxAgeSeconds?.[def.name] ?? DEFAULT_QUEUE_MAX_AGE_SECONDS[def.name];
      alarm('queue-age', def.name, {
        metric: queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum' }),
        threshold: maxAge,
        evaluationPeriods: 5,
        datapointsToAlarm: 5,
        alarmDescription: `Messages have waited ${maxAge} s or more in the ${def.name} queue for 5 minutes.`,
      });
    }

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

    // API Gateway's own 429s on the alarm intake routes (its throttling: DEFAULT_INGEST_THROTTLE) appear
    // only in the access log: a metric filter counts them.
    const throttled = new logs.MetricFilter(this, 'IngestThrottledFilter', {
      logGroup: http.accessLogs,
      filterPattern: logs.FilterPattern.all(
        logs.FilterPattern.stringValue('$.status', '=', '429'),
        logs.FilterPattern.stringValue('$.path', '=', '/alarm/*'),
      ),
      metricNamespace: METRICS.namespace,
      metricName: METRICS.ingestThrottled.name,
      metricValue: '1',
      dimensions: { api: '$.apiId' },
      unit: cloudwatch.Unit.COUNT,
    });
    alarm('ingest-throttled', 'ingest', {
      metric: throttled.metric({
        dimensionsMap: { api: http.api.apiId },
        statistic: 'Sum',
        period: fiveMinutes,
      }),
      threshold: 1,
      evaluationPeriods: 1,
      alarmDescription: 'API Gateway refused alarm reports with 429 (its throttling of the /alarm/* routes).',
    });

    // DynamoDB: throttled requests of the table and its indexes (an on-demand table throttles on a hot
    // partition or a jump past twice its previous peak), and errors on AWS's side.
    const dynamo = (metricName: string, index?: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName,
        dimensionsMap: { TableName: table.tableName, ...(index ? { GlobalSecondaryIndexName: index } : {}) },
        statistic: 'Sum',
        period: fiveMinutes,
      });
    const throttleMetrics = [undefined, ...tableDef.globalSecondaryIndexes.map((g) => g.indexName)].flatMap(
      (index) => [dynamo('ReadThrottleEvents', index), dynamo('WriteThrottleEvents', index)],
    );
    alarm('table-throttles', 'table', {
      metric: new cloudwatch.MathExpression({
        expression: `SUM([${throttleMetrics.map((_, i) => `t${i}`).join(',')}])`,
        usingMetrics: Object.fromEntries(throttleMetrics.map((m, i) => [`t${i}`, m])),
        period: fiveMinutes,
      }),
      threshold: 1,
      evaluationPeriods: 1,
      alarmDescription: 'DynamoDB throttled reads or writes of the table or one of its indexes.',
    });
    alarm('table-errors', 'table', {
      metric: table.metricSystemErrorsForOperations({
        operations: TABLE_OPERATIONS,
        period: fiveMinutes,
        statistic: 'Sum',
      }),
      threshold: 1,
      evaluationPeriods: 1,
      alarmDescription: 'DynamoDB answered requests with an internal server error (HTTP 500).',
    });

    // The service's own metrics, addressed with the two dimensions every one of them carries.
    const custom = (name: string) =>
      new cloudwatch.Metric({
        namespace: METRICS.namespace,
        metricName: name,
        dimensionsMap: {
          [METRICS.serviceDimension]: METRICS.service,
          [METRICS.environmentDimension]: props.envName,
        },
        statistic: 'Sum',
        period: fiveMinutes,
      });
    alarm('alarm-log-lost', 'alarm-log', {
      metric: custom(METRICS.alarmLogLost.name),
      threshold: 1,
      evaluationPeriods: 1,
      alarmDescription:
        'Alarm log entries (the alarm history) could not be written; the alarms were processed.',
    });
    alarm('alarms-handed-back', 'alarms', {
      metric: custom(METRICS.alarmsHandedBack.name),
      threshold: DEFAULT_HANDED_BACK_THRESHOLD,
      evaluationPeriods: 1,
      alarmDescription:
        `${DEFAULT_HANDED_BACK_THRESHOLD} or more alarms were handed back to the alarm queue in 5 minutes ` +
        '(their metric kept being committed by other consumers).',
    });
    alarm('pipeline-lag', 'pipeline', {
      metric: custom(METRICS.pipelineLag.name).with({ statistic: 'p99' }),
      threshold: DEFAULT_PIPELINE_LAG_P99_MS,
      evaluationPeriods: 1,
      alarmDescription: `The p99 of the time from report to processed alarm reached ${DEFAULT_PIPELINE_LAG_P99_MS} ms.`,
    });
    alarm('rate-limit-degraded', 'rate-limit', {
      metric: custom(METRICS.rateLimitDegraded.name),
      threshold: 1,
      evaluationPeriods: 1,
      alarmDescription:
        "The alarm door admitted reports on its container's own count: the shared rate-limit count was unreachable.",
    });
    alarm('due-work-buried', 'due-work', {
      metric: custom(METRICS.dueWorkBuried.name),
      threshold: 1,
      evaluationPeriods: 1,
      alarmDescription:
        'Due work (a reminder, delayed flush or recovery, pause expiry) failed its last attempt.',
    });

    const failures = props.signInFailureThreshold ?? DEFAULT_SIGNIN_FAILURE_THRESHOLD;
    alarm('sign-in-failures', 'sign-in', {
      metric: new cloudwatch.Metric({
        namespace: METRICS.namespace,
        metricName: METRICS.authEvents.name,
        dimensionsMap: {
          [METRICS.serviceDimension]: METRICS.service,
          [METRICS.environmentDimension]: props.envName,
          event: 'signin-failed',
        },
        statistic: 'Sum',
        period: fiveMinutes,
      }),
      threshold: failures,
      evaluationPeriods: 1,
      alarmDescription: `${failures} or more failed sign-ins in 5 minutes across the deployment (guessing or password spraying).`,
    });

    // The schedule itself: no run for SCHEDULE_SILENCE_MINUTES is missing data, and missing data fires.
    alarm('schedule-stopped', props.runner.node.id, {
      metric: props.runner.metricInvocations({ period: fiveMinutes, statistic: 'Sum' }),
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      threshold: 1,
      evaluationPeriods: SCHEDULE_SILENCE_MINUTES / 5,
      alarmDescription: `The due-work schedule has not run for ${SCHEDULE_SILENCE_MINUTES} minutes.`,
    });
  }
}

type AlarmFactory = (
  kind: AlarmKind,
  subject: string,
  options: Omit<cloudwatch.AlarmProps, 'comparisonOperator' | 'treatMissingData' | 'alarmName'> &
    Partial<Pick<cloudwatch.AlarmProps, 'comparisonOperator' | 'treatMissingData'>>,
) => cloudwatch.Alarm;
