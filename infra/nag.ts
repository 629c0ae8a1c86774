import { type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { ServiceData } from './constructs/data.ts';
import type { GradualDeployments } from './constructs/deployments.ts';
import type { ServiceHttpApi } from './constructs/http-api.ts';
import type { ServiceFunctions } from './constructs/service-functions.ts';

/** The parts of the service's stack (infra/stack.ts) whose findings are acknowledged here. */
export interface NaggedStack extends Stack {
  readonly data: ServiceData;
  readonly functions: ServiceFunctions;
  readonly http: ServiceHttpApi;
  readonly notifyConsumer: lambda.IFunction;
  readonly notifyStatements: iam.PolicyStatement[];
  readonly deployments: GradualDeployments;
}

/**
 * Every cdk-nag AwsSolutions finding the stack accepts, each on the narrowest construct and with its
 * reason. cdk-nag 3 runs as a CDK policy validation plugin (infra/app.ts registers it, so `cdk synth`
 * and `cdk deploy` stop on any finding not acknowledged here); infra/stack.test.ts asserts the pack
 * finds nothing else, with and without the optional notification providers.
 */
export function acknowledgeNagFindings(stack: NaggedStack): void {
  const { functions, data, http } = stack;

  // Findings on execution roles surface on the roles (shared by functions with the same grants).
  for (const fn of [...functions.functions, ...functions.roles.values()]) {
    acknowledge(
      fn,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      'AWSLambdaBasicExecutionRole grants only logs:CreateLogGroup, logs:CreateLogStream and logs:PutLogEvents, ' +
        'which the function needs to write to its own log group; it gives no data access.',
    );
    acknowledge(
      fn,
      'AwsSolutions-IAM5[Resource::*]',
      'X-Ray active tracing: CDK grants xray:PutTraceSegments and xray:PutTelemetryRecords, which support no ' +
        "resource-level permissions, so '*' is their only resource. The stack test checks that no other " +
        "action is granted on '*'.",
    );
  }

  // Only present when the operator configures SES or Pinpoint voice (notifyEnvironment).
  for (const statement of stack.notifyStatements) {
    const service = statement.actions[0]?.split(':')[0];
    const reason = PROVIDER_WILDCARD_REASONS[service ?? ''];
    if (!reason) continue;
    for (const resource of statement.resources.filter((r) => r.includes('*'))) {
      acknowledge(
        functions.roleOf.get(stack.notifyConsumer) ?? stack.notifyConsumer,
        `AwsSolutions-IAM5[Resource::${findingResource(stack, resource)}]`,
        reason,
      );
    }
  }

  const { role, preTraffic } = stack.deployments;
  if (role && preTraffic) {
    acknowledge(
      role,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
      "CodeDeploy's own policy for Lambda deployments (read the deployment's alarms, move the alias to the new " +
        'version, invoke CodeDeployHook_* functions): the role is assumed by CodeDeploy only, for the aliases.',
    );
    const checkRole = stack.functions.roleOf.get(preTraffic) ?? preTraffic;
    acknowledge(
      checkRole,
      `AwsSolutions-IAM5[Resource::${findingResource(stack, stack.deployments.groupsArn ?? '')}]`,
      "The pre-traffic check reads the deployment it checks and reports its hook's status: any deployment " +
        "group of the stack's own CodeDeploy application (each group names the check as its hook).",
    );
    // The check invokes the version being deployed of each gradually deployed function: any version.
    for (const fn of stack.functions.aliases.keys()) {
      acknowledge(
        checkRole,
        `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(fn.node.defaultChild as CfnElement)}.Arn>:*]`,
        'The pre-traffic check invokes the new version of this function, whose number is known only at deploy time.',
      );
    }
  }
  // The routes are children of the API: one acknowledgement covers them and only them.
  acknowledge(
    http.api,
    'AwsSolutions-APIG4',
    'The service authenticates every request itself, as its API specification requires: app HMAC ' +
      'signatures (appid, timestamp, sign), task signatures, or a task intake token on /alarm/*, checked ' +
      'against stored secrets before any data is read (shared/domain/auth). An API Gateway authorizer could ' +
      'not verify them without the same secrets and would add a Lambda call to every request. GET /health ' +
      'and the $default 404 answer are public by design.',
  );
  acknowledge(
    data.sealKey,
    'AwsSolutions-SMG4',
    'The seal key encrypts the tokens and secrets stored in the table; rotating it would make every sealed ' +
      'value unreadable (re-sealing is an offline migration), so it is never rotated (infra/constructs/data.ts).',
  );
  acknowledge(
    data.notifySecret,
    'AwsSolutions-SMG4',
    'Credentials issued by third-party providers (DingTalk, Yach, WeCom app secrets, SMTP password): Secrets ' +
      'Manager cannot rotate them at the provider; the operator puts the new value when a provider rotates it.',
  );
}

const PROVIDER_WILDCARD_REASONS: Record<string, string> = {
  ses:
    'ses:SendEmail is authorised on the sending identity and configuration set the operator chooses ' +
    '(EMAIL_FROM may be an address or a domain identity); only this action, in this account and region.',
  'sms-voice':
    'sms-voice:SendVoiceMessage is authorised on the origination number or pool the operator sets ' +
    '(VOICE_ORIGINATION_IDENTITY); only this action, in this account and region.',
};

function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/** A policy resource as cdk-nag names it in a finding id (`<Logical.Arn>/index/*`, `arn:aws:ses:...`). */
function findingResource(stack: Stack, resource: string): string {
  return flattenCfnReference(Stack.of(stack).resolve(resource));
}
