import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { FunctionGroup } from './definitions.ts';
import type { QueueName } from '../shared/contracts/messages.ts';
import { schedule } from './consumers.ts';
import { ServiceData } from './constructs/data.ts';
import { GradualDeployments } from './constructs/deployments.ts';
import { ServiceHttpApi, type Throttle } from './constructs/http-api.ts';
import {
  checkVariables,
  NOTIFY_VARIABLES,
  notifyProviderStatements,
  refuseNotifySecrets,
  TUNING_VARIABLES,
} from './constructs/notify-providers.ts';
import { ServiceObservability } from './constructs/observability.ts';
import {
  DISPATCHER_RESERVED,
  maxConcurrency,
  pascal,
  type ReservedWorker,
  reservedConcurrency,
  ServiceQueues,
} from './constructs/queues.ts';
import { type RuntimeSettings, ServiceFunctions } from './constructs/service-functions.ts';
import { SingleSignOn } from './constructs/single-sign-on.ts';
import { acknowledgeNagFindings } from './nag.ts';

export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface TocsinStackProps extends StackProps {
  /** `{common.env}` in templates and part of the stack name. */
  envName: string;
  /** Accept legacy MD5 signatures (API guide §3.1: accepted unless the deployment disables them). */
  legacySign?: boolean;
  /** IANA time zone of `report_time`. */
  reportTimeZone?: string;
  logLevel?: string;
  logRetention?: logs.RetentionDays;
  /** Service tunables for every function (names in TUNING_VARIABLES). */
  tuning?: Record<string, string>;
  /**
   * Notification provider settings, for the notification consumer only (names in NOTIFY_VARIABLES);
   * credentials are refused here and live in the NotifyProviderSecret secret instead.
   */
  notifyEnvironment?: Record<string, string>;
  /** Assertion tests: inline stub code instead of esbuild bundles; all else identical. */
  skipBundling?: boolean;
  /** Defaults to the version in package.json. */
  serviceVersion?: string;
  /** Default throttling of every API route (DEFAULT_API_THROTTLE: 1000 rps, burst 2000). */
  apiThrottle?: Throttle;
  /** Throttling of each ingestion route, /alarm/* (DEFAULT_INGEST_THROTTLE: 500 rps, burst 1000). */
  ingestThrottle?: Throttle;
  /**
   * A production stack: termination protection, canary deployments of every function deployed through
   * an alias (intake, consumers, due runner), and synth refuses
   * it without an alarm destination (alarmEmail, alarmTopicArn or alarmDestination 'none').
   */
  production?: boolean;
  /** E-mail address subscribed to the alarm topic (confirmed by the recipient). */
  alarmEmail?: string;
  /** An existing SNS topic for the alarms, instead of the stack's own (which is then not created). */
  alarmTopicArn?: string;
  /** 'none': a production stack whose alarms notify no one yet, knowingly (subscribe later). */
  alarmDestination?: 'none';
  /** Reserved concurrency per alarm intake function (DEFAULT_INTAKE_CONCURRENCY); 0: none. */
  intakeConcurrency?: Partial<Record<FunctionGroup, number>>;
  /** MaximumConcurrency per queue consumer (DEFAULT_CONSUMER_CONCURRENCY); 0: no cap. */
  consumerConcurrency?: Partial<Record<QueueName, number>>;
  /** Reserved concurrency of the alarm consumer and the due runner (DEFAULT_RESERVED_CONCURRENCY); 0: none. */
  reservedConcurrency?: Partial<Record<ReservedWorker, number>>;
  /**
   * The task whose signed test report the pre-traffic check of a new intake version sends
   * (`POST /alarm/test`); without one the check sends an unsigned report and expects its refusal.
   */
  deployCheckTask?: number;
  /** This deployment only: CodeDeploy neither waits on nor rolls back on the alarm path's alarms. */
  ignoreDeploymentAlarms?: boolean;
  /** Console single sign-on: the OpenID Connect provider's issuer and the console's client id. */
  singleSignOn?: { issuer?: string; clientId?: string; allowUnverifiedEmail?: boolean };
  /**
   * Where the claim links of messages lead (PUBLIC_BASE_URL): the API's URL unless given (a custom
   * domain in front of it).
   */
  publicBaseUrl?: string;
}

/**
 * The whole service in one stack, driven by infra/definitions.ts (the same data the local runtime
 * mounts). One stack rather than stateful + stateless: a cross-stack reference pins the exported
 * table/queues (CloudFormation refuses to change an export in use), while the stateful resources are
 * already protected in place (table: RETAIN + deletion protection + PITR; seal key: RETAIN).
 */
export class TocsinStack extends Stack {
  readonly data: ServiceData;
  readonly queues: ServiceQueues;
  readonly functions: ServiceFunctions;
  readonly http: ServiceHttpApi;
  readonly observability: ServiceObservability;
  readonly singleSignOn: SingleSignOn;
  /** The notification consumer and the provider permissions it alone holds. */
  readonly notifyConsumer: lambda.IFunction;
  readonly notifyStatements: iam.PolicyStatement[];
  /** The scheduled due-work function. */
  readonly runner: lambda.IFunction;
  readonly deployments: GradualDeployments;

  constructor(scope: Construct, id: string, props: TocsinStackProps) {
    super(scope, id, { ...props, terminationProtection: props.terminationProtection ?? props.production });
    checkAlarmDestination(id, props);
    const settings: RuntimeSettings = {
      envName: props.envName,
      serviceVersion: props.serviceVersion ?? packageVersion(),
      legacySign: props.legacySign ?? true,
      reportTimeZone: props.reportTimeZone ?? 'UTC',
      logLevel: props.logLevel ?? 'INFO',
      tuning: props.tuning,
    };
    const notifyEnvironment = props.notifyEnvironment ?? {};
    checkVariables('tuning', props.tuning ?? {}, TUNING_VARIABLES);
    refuseNotifySecrets(notifyEnvironment);
    checkVariables('notifyEnvironment', notifyEnvironment, NOTIFY_VARIABLES);

    this.data = new ServiceData(this, 'Data');
    this.queues = new ServiceQueues(this, 'Queues');
    // Before the functions: the single sign-on functions' roles name its secret.
    this.singleSignOn = new SingleSignOn(this, 'SingleSignOn', { ...props.singleSignOn });
    this.functions = new ServiceFunctions(this, 'Functions', {
      projectRoot: PROJECT_ROOT,
      table: this.data.table,
      queues: this.queues,
      sealKey: this.data.sealKey,
      notifySecret: this.data.notifySecret,
      notifyStatements: notifyProviderStatements(this, notifyEnvironment),
      ssoClientSecret: this.singleSignOn.clientSecret,
      settings,
      logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      skipBundling: props.skipBundling,
    });
    this.http = new ServiceHttpApi(this, 'Http', {
      functions: this.functions,
      throttle: props.apiThrottle,
      ingestThrottle: props.ingestThrottle,
      intakeConcurrency: props.intakeConcurrency,
      accessLogRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    });
    this.singleSignOn.configure(this.http);

    // Queue consumers. The event source mapping reads the queue with the consumer's role (its access
    // grants ReceiveMessage, DeleteMessage and GetQueueAttributes on it); the notification consumer
    // alone sees the provider settings. Each deploys gradually through its alias (deployments.ts).
    this.notifyStatements = this.functions.notifyStatements;
    let notifyConsumer: lambda.IFunction | undefined;
    const reserved = (worker: ReservedWorker) =>
      reservedConcurrency(
        worker,
        props.reservedConcurrency?.[worker],
        maxConcurrency(worker, props.consumerConcurrency?.[worker]),
      );
    for (const { def, queue } of this.queues.all) {
      const sendsNotifications = def.name === 'notify';
      const cap = maxConcurrency(def.name, props.consumerConcurrency?.[def.name]);
      const consumer = this.functions.add(`${pascal(def.name)}Consumer`, {
        entry: def.consumer,
        kind: 'consumer',
        access: def.access,
        timeoutSeconds: def.timeoutSeconds,
        alias: true,
        reservedConcurrency: def.name === 'alarm' || def.name === 'due' ? reserved(def.name) : undefined,
        environment: sendsNotifications ? notifyEnvironment : undefined,
      });
      if (sendsNotifications) notifyConsumer = consumer;
      // Not SqsEventSource: it would also grant the whole of grantConsumeMessages (GetQueueUrl,
      // ChangeMessageVisibility) whether the consumer uses it or not. On the alias.
      this.functions.invocable(consumer).addEventSourceMapping(`${pascal(def.name)}Source`, {
        eventSourceArn: queue.queueArn,
        batchSize: def.batchSize,
        ...(def.gather ? { maxBatchingWindow: Duration.seconds(1) } : {}),
        reportBatchItemFailures: true,
        ...(cap ? { maxConcurrency: cap } : {}),
      });
    }
    if (!notifyConsumer) throw new Error('definitions.ts has no notify queue');
    this.notifyConsumer = notifyConsumer;
    this.linkToApi(notifyConsumer, props.publicBaseUrl);

    // Due work (reminders, delayed flushes, resumes): a failed run is simply picked up by the next tick,
    // so neither EventBridge nor Lambda's async invoke retries it.
    const runner = this.functions.add('RunDueWork', {
      entry: schedule.handler,
      kind: 'schedule',
      access: schedule.access,
      timeoutSeconds: schedule.timeoutSeconds,
      alias: true,
      reservedConcurrency: reserved('due') === undefined ? undefined : DISPATCHER_RESERVED,
    });
    this.runner = runner;
    const scheduled = this.functions.invocable(runner);
    scheduled.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(2) });
    new events.Rule(this, 'DueWorkSchedule', {
      description: 'tocsin due work, every minute',
      schedule: events.Schedule.rate(Duration.minutes(schedule.rateMinutes)),
      targets: [new targets.LambdaFunction(scheduled, { retryAttempts: 0 })],
    });

    // Last: it watches every function created above.
    this.observability = new ServiceObservability(this, 'Observability', {
      functions: this.functions,
      queues: this.queues,
      http: this.http,
      table: this.data.table,
      runner,
      envName: props.envName,
      alarmEmail: props.alarmEmail,
      alarmTopicArn: props.alarmTopicArn,
    });
    this.deployments = new GradualDeployments(this, 'Deployments', {
      functions: this.functions,
      observability: this.observability,
      queues: this.queues,
      table: this.data.table,
      sealKey: this.data.sealKey,
      envName: props.envName,
      production: props.production ?? false,
      ignoreAlarms: props.ignoreDeploymentAlarms,
      deployCheckTask: props.deployCheckTask,
    });

    acknowledgeNagFindings(this);

    new CfnOutput(this, 'ApiUrl', { value: this.http.api.apiEndpoint, description: 'Base URL of the API' });
    new CfnOutput(this, 'TableName', { value: this.data.table.tableName });
    new CfnOutput(this, 'SealKeySecretArn', {
      value: this.data.sealKey.secretArn,
      description: 'For `npm run admin -- import FILE --seal-key-secret ARN`',
    });
    new CfnOutput(this, 'NotifySecretArn', {
      value: this.data.notifySecret.secretArn,
      description:
        'Provider credentials: `aws secretsmanager put-secret-value --secret-id ARN --secret-string JSON`',
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.observability.topic.topicArn,
      description:
        'Every alarm notifies this topic: `aws sns subscribe --topic-arn ARN --protocol email ...`',
    });
    new CfnOutput(this, 'DashboardName', { value: this.observability.dashboard.dashboardName });
    if (this.singleSignOn.clientSecret) {
      new CfnOutput(this, 'SsoClientSecretArn', {
        value: this.singleSignOn.clientSecret.secretArn,
        description:
          "The OpenID Connect client secret: `aws secretsmanager put-secret-value --secret-id ARN --secret-string '<secret>'`",
      });
    }
    new CfnOutput(this, 'ApiAccessLogGroup', { value: this.http.accessLogs.logGroupName });
    for (const { def, queue, deadLetterQueue } of this.queues.all) {
      new CfnOutput(this, `${pascal(def.name)}QueueUrl`, { value: queue.queueUrl });
      new CfnOutput(this, `${pascal(def.name)}DeadLetterQueueUrl`, { value: deadLetterQueue.queueUrl });
    }
  }

  /**
   * The service's public address (PUBLIC_BASE_URL) for the functions that make or answer claim links:
   * the notification consumer (it mints them) and the claim routes (the origin a claim must come from).
   */
  private linkToApi(notifyConsumer: lambda.IFunction, given: string | undefined): void {
    if (given !== undefined && !PUBLIC_BASE_URL.test(given))
      throw new Error('publicBaseUrl must be an https URL without query or fragment');
    const url = given ?? this.http.api.apiEndpoint;
    for (const fn of [
      notifyConsumer,
      this.http.handlers.get('GET /claim'),
      this.http.handlers.get('POST /claim'),
    ]) {
      if (!fn) throw new Error('definitions.ts has no claim routes');
      (fn as lambda.Function).addEnvironment('PUBLIC_BASE_URL', url);
    }
  }
}

/** `https://` and a host, optionally a path; no query or fragment (as the functions check it). */
const PUBLIC_BASE_URL = /^https:\/\/[^\s/?#]+(?:\/[^\s?#]*)?$/;

/** A production stack's alarms must reach someone, or the operator must say that they reach no one. */
function checkAlarmDestination(stackId: string, props: TocsinStackProps): void {
  const given = props.alarmEmail !== undefined || props.alarmTopicArn !== undefined;
  if (props.alarmDestination !== undefined && props.alarmDestination !== 'none')
    throw new Error(`alarmDestination: only 'none' (got ${String(props.alarmDestination)})`);
  if (props.alarmDestination === 'none' && given)
    throw new Error('alarmDestination=none contradicts alarmEmail / alarmTopicArn: give one or the other');
  if (props.production && !given && props.alarmDestination !== 'none')
    throw new Error(
      `${stackId} is a production stack and its alarms would reach no one. Give -c alarmEmail=ADDRESS ` +
        "(subscribed to the stack's alarm topic), -c alarmTopicArn=ARN (an existing SNS topic), or " +
        '-c alarmDestination=none to deploy without any (docs/aws-operations.md, "Getting the alarms").',
    );
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}
