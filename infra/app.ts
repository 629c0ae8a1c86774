import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { TocsinStack } from './stack.ts';

/**
 * `npx cdk synth|deploy [-c envName=staging] [-c legacySign=false] [-c reportTimeZone=Asia/Shanghai]`
 * `[-c tuning='{"ALARM_RATE_LIMIT":"100"}'] [-c notify='{"EMAIL_PROVIDER":"ses","EMAIL_FROM":"a@b.c"}']`
 * `[-c alarmEmail=ops@example.com] [-c apiThrottle='{"rateLimit":1000,"burstLimit":2000}']`
 * `[-c ingestThrottle='{"rateLimit":500,"burstLimit":1000}']` (docs/aws-operations.md)
 * `[-c oidcIssuer=https://... -c oidcClientId=...]` (console single sign-on, docs/sign-in.md).
 * The target account/region come from the CLI profile (CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION).
 * Provider credentials (DING_WORK_APPSECRET, YACH_WORK_APPSECRET, WECHAT_CORP_SECRET, SMTP_PASS) are
 * refused in `-c notify`: they go into the secret of the NotifySecretArn output.
 */
const app = new App();
// cdk-nag's AwsSolutions pack: `cdk synth` and `cdk deploy` stop on any finding that infra/nag.ts does
// not acknowledge with its reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

function context(name: string): string | undefined {
  const value = app.node.tryGetContext(name);
  return value === undefined || value === null || value === '' ? undefined : String(value);
}

function flag(name: string, fallback: boolean): boolean {
  const value = context(name);
  if (value === undefined) return fallback;
  if (['1', 'true', 'yes'].includes(value.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(value.toLowerCase())) return false;
  throw new Error(`context ${name} must be true or false`);
}

/** A context value holding variables: an object in cdk.json, or a JSON string given with `-c`. */
function variables(name: string): Record<string, string> | undefined {
  const raw = app.node.tryGetContext(name);
  if (raw === undefined || raw === null || raw === '') return undefined;
  const value = typeof raw === 'string' ? JSON.parse(raw) : raw;
  if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`context ${name} must be an object`);
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
}

/** A throttle context value: `{"rateLimit": n, "burstLimit": n}` (object or JSON string). */
function throttle(name: string): { rateLimit: number; burstLimit: number } | undefined {
  const value = variables(name);
  if (value === undefined) return undefined;
  const rateLimit = Number(value.rateLimit);
  const burstLimit = Number(value.burstLimit);
  if (!(rateLimit > 0) || !(burstLimit > 0))
    throw new Error(`context ${name} needs rateLimit and burstLimit`);
  return { rateLimit, burstLimit };
}

const envName = context('envName') ?? 'production';
if (!/^[a-z][a-z0-9-]{0,30}$/.test(envName)) throw new Error('context envName must match [a-z][a-z0-9-]*');

new TocsinStack(app, `Tocsin-${envName}`, {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: `tocsin alarm task management service (${envName})`,
  envName,
  legacySign: flag('legacySign', true),
  reportTimeZone: context('reportTimeZone') ?? 'UTC',
  logLevel: context('logLevel') ?? 'INFO',
  tuning: variables('tuning'),
  notifyEnvironment: variables('notify'),
  skipBundling: flag('skipBundling', false),
  apiThrottle: throttle('apiThrottle'),
  ingestThrottle: throttle('ingestThrottle'),
  alarmEmail: context('alarmEmail'),
  singleSignOn: { issuer: context('oidcIssuer'), clientId: context('oidcClientId') },
});

app.synth();
