import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { CheckTarget, Probe } from '../../shared/deploy/pre-traffic.ts';
import { deployCheck } from '../consumers.ts';
import { functionGroups } from '../definitions.ts';
import { METRICS, type MetricKey } from '../../shared/contracts/metrics.ts';
import type { AlarmKind, ServiceObservability } from './observability.ts';
import { pascal, type ServiceQueues } from './queues.ts';
import type { FunctionKind, ServiceFunctions } from './service-functions.ts';

/**
 * Production: a new version takes 10% of the invocations for 10 minutes (two periods of its
 * five-minute alarms), then all of them. Other stacks shift at once.
 */
export const PRODUCTION_DEPLOYMENT = codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_10MINUTES;
export const OTHER_DEPLOYMENT = codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE;

/**
 * A version's rollback alarm fires when its share of failures (intake: refusals; consumers and the
 * runner: failed batch items) exceeds that of all versions together by this many percentage points,
 * over five minutes in which it handled at least `VERSION_MIN_ITEMS` of its kind: a version that
 * refuses what the others accept stands out whatever the usual refusals (bad signatures, rate limits).
 */
export const VERSION_FAILURE_MARGIN = 20;
export const VERSION_MIN_ITEMS: Record<FunctionKind, number> = {
  ingest: 20,
  consumer: 10,
  schedule: 1,
  http: 20,
  hook: 1,
};

/** What a version's rollback alarm compares: its items and failures, by metric. */
const VERSION_METRICS: Partial<
  Record<FunctionKind, { items: MetricKey; failures: MetricKey; kind: AlarmKind }>
> = {
  ingest: { items: 'intakeReports', failures: 'intakeRefused', kind: 'version-refusals' },
  consumer: { items: 'batchItems', failures: 'batchItemFailures', kind: 'version-failures' },
  schedule: { items: 'batchItems', failures: 'batchItemFailures', kind: 'version-failures' },
};

/** How the pre-traffic check calls each kind of function (shared/deploy/pre-traffic.ts). */
function probeOf(kind: FunctionKind, entry: string): Probe {
  if (kind === 'ingest') return entry === functionGroups['alarm-monitors'].handler ? 'monitors' : 'report';
  return kind === 'schedule' ? 'schedule' : 'consumer';
}

export interface GradualDeploymentsProps {
  functions: ServiceFunctions;
  observability: ServiceObservability;
  queues: ServiceQueues;
  table: dynamodb.ITable;
  sealKey: secretsmanager.ISecret;
  envName: string;
  production: boolean;
  /** One deployment that must go through while the alarms fire (a fix during an incident). */
  ignoreAlarms?: boolean;
  /** The task whose signed test report the check sends to a new intake version. */
  deployCheckTask?: number;
}

/**
 * Gradual deployment of every function invoked through its `live` alias (the alarm intake functions,
 * the three queue consumers and the due runner): each deploy publishes a version and CodeDeploy moves
 * the alias to it, after a pre-traffic check that calls the new version as its callers would, rolled
 * back when one of the function's alarms fires meanwhile (docs/aws-operations.md, "Deploying"): its
 * errors, its version's share of refusals or failed items against all versions, and for a consumer its
 * dead-letter queue growing (intake: the API's 5xx).
 */
export class GradualDeployments extends Construct {
  readonly groups = new Map<string, codedeploy.LambdaDeploymentGroup>();
  /** The alarms that roll each function's deployment back, by function construct id. */
  readonly rollbackAlarms = new Map<string, cloudwatch.IAlarm[]>();
  /** CodeDeploy's service role, shared by the groups (none without aliases). */
  readonly role?: iam.Role;
  /** The pre-traffic check (none without aliases). */
  readonly preTraffic?: lambda.IFunction;
  /** The ARN of every deployment group of the stack's CodeDeploy application (none without aliases). */
  groupsArn?: string;

  constructor(scope: Construct, id: string, props: GradualDeploymentsProps) {
    super(scope, id);
    const { functions, observability } = props;
    if (functions.aliases.size === 0) return;
    const application = new codedeploy.LambdaApplication(this, 'Application');
    this.groupsArn = Stack.of(this).formatArn({
      service: 'codedeploy',
      resource: 'deploymentgroup',
      resourceName: `${application.applicationName}/*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    // One service role for every group (CodeDeploy's AWSCodeDeployRoleForLambdaLimited: alias updates;
    // and the invocation of the pre-traffic check), its policy inline: the groups get it without
    // policy updates, so CDK's own grants add no policy resource.
    const hooks = new iam.PolicyDocument();
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('codedeploy.amazonaws.com'),
      managedPolicies: [
        iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSCodeDeployRoleForLambdaLimited'),
      ],
      inlinePolicies: { PreTrafficCheck: hooks },
    });
    this.role = role;
    const targets: { fn: lambda.IFunction; group: codedeploy.LambdaDeploymentGroup; probe: Probe }[] = [];
    for (const [fn, alias] of functions.aliases) {
      const name = fn.node.id;
      const kind = functions.kinds.get(fn) as FunctionKind;
      const queue = props.queues.all.find((q) => `${pascal(q.def.name)}Consumer` === name);
      const alarms = [
        observability.alarmOf('function-errors', name),
        this.versionAlarm(props, fn, alias.version.version, kind),
        // Intake's handlers answer an unexpected error with a 500 envelope (not a Lambda error); a
        // consumer's messages that keep failing end in its dead-letter queue.
        ...(kind === 'ingest' ? [observability.alarmOf('api-5xx', 'http')] : []),
        ...(queue ? [observability.alarmOf('dead-letter-queue', queue.def.name)] : []),
      ];
      this.rollbackAlarms.set(name, alarms);
      const group = new codedeploy.LambdaDeploymentGroup(this, `${name}Deployment`, {
        application,
        alias,
        role: role.withoutPolicyUpdates(),
        deploymentConfig: props.production ? PRODUCTION_DEPLOYMENT : OTHER_DEPLOYMENT,
        alarms,
        ignoreAlarmConfiguration: props.ignoreAlarms,
        autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
      });
      this.groups.set(name, group);
      // The alias moves (and CodeDeploy starts) only once its alarms watch the new version.
      for (const a of alarms) alias.node.addDependency(a);
      targets.push({ fn, group, probe: probeOf(kind, functions.entries.get(fn) ?? '') });
    }
    this.preTraffic = this.addPreTrafficCheck(props, targets);
    hooks.addStatements(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [this.preTraffic.functionArn],
      }),
    );
  }

  /**
   * The alarm on a version's share of failures against all versions' (VERSION_FAILURE_MARGIN): the
   * service's per-version metrics of the function, addressed by its name and the version the alias
   * moves to.
   */
  private versionAlarm(
    props: GradualDeploymentsProps,
    fn: lambda.IFunction,
    version: string,
    kind: FunctionKind,
  ): cloudwatch.Alarm {
    const spec = VERSION_METRICS[kind];
    if (!spec) throw new Error(`${fn.node.id}: no version metrics for a ${kind} function`);
    const fiveMinutes = Duration.minutes(5);
    const metric = (key: MetricKey, ofVersion: boolean) =>
      new cloudwatch.Metric({
        namespace: METRICS.namespace,
        metricName: METRICS[key].name,
        dimensionsMap: {
          [METRICS.serviceDimension]: METRICS.service,
          [METRICS.environmentDimension]: props.envName,
          function: fn.functionName,
          ...(ofVersion ? { version } : {}),
        },
        statistic: 'Sum',
        period: fiveMinutes,
      });
    const min = VERSION_MIN_ITEMS[kind];
    const what = spec.kind === 'version-refusals' ? 'refuses' : 'fails';
    return props.observability.addAlarm(spec.kind, fn.node.id, {
      metric: new cloudwatch.MathExpression({
        // Percentage points of failures above all versions', once the version handled `min` items.
        expression: `IF(FILL(n, 0) >= ${min}, 100 * FILL(f, 0) / FILL(n, 1) - 100 * FILL(fa, 0) / FILL(na, 1), 0)`,
        usingMetrics: {
          n: metric(spec.items, true),
          f: metric(spec.failures, true),
          na: metric(spec.items, false),
          fa: metric(spec.failures, false),
        },
        period: fiveMinutes,
        label: `${fn.node.id}: failures of the new version above all versions' (percentage points)`,
      }),
      threshold: VERSION_FAILURE_MARGIN,
      evaluationPeriods: 1,
      alarmDescription:
        `The version of ${fn.node.id} being deployed ${what} ${VERSION_FAILURE_MARGIN} percentage points more ` +
        'of what it handles than all versions together.',
    });
  }

  /**
   * One function checks every group's new version before traffic moves (shared/deploy/pre-traffic.ts):
   * it reads which function and version the deployment moves, invokes that version as its callers
   * would and reports the lifecycle hook's status.
   */
  private addPreTrafficCheck(
    props: GradualDeploymentsProps,
    targets: { fn: lambda.IFunction; group: codedeploy.LambdaDeploymentGroup; probe: Probe }[],
  ): lambda.IFunction {
    const { functions } = props;
    const stack = Stack.of(this);
    const checks: CheckTarget[] = targets.map(({ fn, probe }) => ({
      functionName: fn.functionName,
      version: (functions.aliases.get(fn) as lambda.Alias).version.version,
      probe,
    }));
    const hook = functions.add('PreTrafficCheck', {
      entry: deployCheck.handler,
      kind: 'hook',
      access: deployCheck.access,
      environment: {
        DEPLOY_CHECK_TARGETS: stack.toJsonString(checks),
        ...(props.deployCheckTask ? { DEPLOY_CHECK_TASK: String(props.deployCheckTask) } : {}),
      },
      statements: [
        // The deployment groups of the application (by name: a group names the check as its hook).
        new iam.PolicyStatement({
          actions: ['codedeploy:GetDeployment', 'codedeploy:PutLifecycleEventHookExecutionStatus'],
          resources: [this.groupsArn as string],
        }),
        new iam.PolicyStatement({
          actions: ['lambda:InvokeFunction'],
          resources: targets.map((t) => `${t.fn.functionArn}:*`),
        }),
      ],
    });
    for (const { fn, group } of targets) {
      group.addPreHook(hook);
      (functions.aliases.get(fn) as lambda.Alias).node.addDependency(hook);
    }
    return hook;
  }
}
