import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stackFromContext } from './context.ts';
import { TocsinStack } from './stack.ts';

/**
 * `npx cdk synth|deploy [-c envName=staging] [-c legacySign=false] [-c reportTimeZone=Asia/Shanghai]`
 * `[-c tuning='{"ALARM_RATE_LIMIT":"100"}'] [-c notify='{"EMAIL_PROVIDER":"ses","EMAIL_FROM":"a@b.c"}']`
 * `[-c alarmEmail=ops@example.com | -c alarmTopicArn=arn:aws:sns:... | -c alarmDestination=none]`
 * `[-c apiThrottle='{"rateLimit":1000,"burstLimit":2000}'] [-c ingestThrottle='{"rateLimit":500,"burstLimit":1000}']`
 * `[-c intakeConcurrency='{"alarm-report":50,"alarm-monitors":50}' | -c intakeConcurrency=off]`
 * `[-c consumerConcurrency='{"alarm":10,"webhook":20,"notify":5}'] [-c production=true]`
 * `[-c ignoreDeploymentAlarms=true]` (docs/aws-operations.md).
 * Without `-c envName` the stack is `Tocsin-dev`, never production. A production stack (envName
 * `production`, or `-c production=true`) has termination protection and needs an alarm destination.
 * `[-c oidcIssuer=https://... -c oidcClientId=...]` (console single sign-on, docs/sign-in.md).
 * The target account/region come from the CLI profile (CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION).
 * Provider credentials (DING_WORK_APPSECRET, YACH_WORK_APPSECRET, WECHAT_CORP_SECRET, SMTP_PASS) are
 * refused in `-c notify`: they go into the secret of the NotifySecretArn output.
 */
const app = new App();
// cdk-nag's AwsSolutions pack: `cdk synth` and `cdk deploy` stop on any finding that infra/nag.ts does
// not acknowledge with its reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

// The context rules (no default environment, production stacks) are in infra/context.ts.
const { id, props } = stackFromContext(app);
new TocsinStack(app, id, props);

app.synth();
