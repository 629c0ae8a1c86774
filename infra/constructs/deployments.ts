import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import type { ServiceObservability } from './observability.ts';
import type { ServiceFunctions } from './service-functions.ts';

/**
 * Production: a new version of an alarm path function takes 10% of the invocations for 10 minutes (two
 * periods of its five-minute alarms), then all of them. Other stacks shift at once.
 */
export const PRODUCTION_DEPLOYMENT = codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_10MINUTES;
export const OTHER_DEPLOYMENT = codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE;

export interface AlarmPathDeploymentsProps {
  functions: ServiceFunctions;
  observability: ServiceObservability;
  production: boolean;
  /** One deployment that must go through while the alarms fire (a fix during an incident). */
  ignoreAlarms?: boolean;
}

/**
 * Gradual deployment of the functions invoked through their `live` alias (the alarm intake functions
 * and the alarm consumer): each deploy publishes a version and CodeDeploy moves the alias to it, rolled
 * back when one of the function's alarms fires meanwhile (docs/aws-operations.md, "Deploying").
 */
export class AlarmPathDeployments extends Construct {
  readonly groups = new Map<string, codedeploy.LambdaDeploymentGroup>();
  /** The alarms that roll each function's deployment back, by function construct id. */
  readonly rollbackAlarms = new Map<string, cloudwatch.IAlarm[]>();
  /** CodeDeploy's service role, shared by the groups (none without aliases). */
  readonly role?: iam.Role;

  constructor(scope: Construct, id: string, props: AlarmPathDeploymentsProps) {
    super(scope, id);
    const { functions, observability } = props;
    if (functions.aliases.size === 0) return;
    const application = new codedeploy.LambdaApplication(this, 'Application');
    // One service role for every group (CodeDeploy's AWSCodeDeployRoleForLambdaLimited: alias updates).
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('codedeploy.amazonaws.com'),
    });
    this.role = role;
    for (const [fn, alias] of functions.aliases) {
      const name = fn.node.id;
      const alarms = [
        observability.alarmOf('function-errors', name),
        // Intake's handlers answer an unexpected error with a 500 envelope (not a Lambda error); the
        // alarm consumer's failed messages are retried and end in its dead-letter queue.
        functions.kinds.get(fn) === 'ingest'
          ? observability.alarmOf('api-5xx', 'http')
          : observability.alarmOf('dead-letter-queue', 'alarm'),
      ];
      this.rollbackAlarms.set(name, alarms);
      this.groups.set(
        name,
        new codedeploy.LambdaDeploymentGroup(this, `${name}Deployment`, {
          application,
          alias,
          role,
          deploymentConfig: props.production ? PRODUCTION_DEPLOYMENT : OTHER_DEPLOYMENT,
          alarms,
          ignoreAlarmConfiguration: props.ignoreAlarms,
          autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
        }),
      );
    }
  }
}
