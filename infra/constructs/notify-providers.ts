import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';

/** Service tunables (shared/config/env.ts) a deployment may set on every function. */
export const TUNING_VARIABLES = [
  'SIGN_SKEW_SECONDS',
  'ALARM_RATE_LIMIT',
  'ALARM_RETENTION_DAYS',
  'TASK_CACHE_SECONDS',
  'WEBHOOK_BACKOFF_SECONDS',
  'NOTIFY_BACKOFF_SECONDS',
  'WEBHOOK_TIMEOUT_MS',
  // Console sign-in (docs/sign-in.md).
  'SESSION_IDLE_MINUTES',
  'SESSION_MAX_HOURS',
  'SIGNIN_MAX_FAILURES',
  'SIGNIN_ADDRESS_MAX_FAILURES',
  'SIGNIN_WINDOW_MINUTES',
  'SIGNIN_LOCK_MINUTES',
  'SIGNIN_ACCOUNT_MAX_FAILURES',
  'SIGNIN_LOCK_MAX_HOURS',
  // App and task credentials (docs/security.md).
  'APP_REQUEST_SIGNATURE',
  'STRICT_APP_GRANTS',
  'FIXED_SIGN_MAX_DAYS',
  // Claim links (API guide §11.7): key rotation, lifetime, rate limits.
  'CLAIM_LINK_KEYS',
  'CLAIM_LINK_HOURS',
  'CLAIM_LINK_ADDRESS_PER_MINUTE',
  'CLAIM_LINK_PER_MINUTE',
] as const;

/**
 * Provider credentials (shared/config/env.ts NOTIFY_SECRET_NAMES). They never go into the template: the
 * notification consumer reads them from the NotifyProviderSecret secret (NOTIFY_SECRETS_ARN).
 */
export const NOTIFY_SECRET_VARIABLES = [
  'DING_WORK_APPSECRET',
  'YACH_WORK_APPSECRET',
  'WECHAT_CORP_SECRET',
  'SMTP_PASS',
] as const;

/**
 * Notification provider settings (shared/config/env.ts loadNotifyConfig), credentials excepted. They are
 * given only to the notification consumer, so that a bad value cannot break cold starts elsewhere.
 */
export const NOTIFY_VARIABLES = [
  'ROBOT_DING_BASE_URL',
  'ROBOT_YACH_BASE_URL',
  'ROBOT_MAX_PER_MINUTE',
  'ROBOT_BLOCK_SECONDS',
  'DING_WORK_BASE_URL',
  'DING_WORK_APPKEY',
  'DING_WORK_AGENT_ID',
  'YACH_WORK_BASE_URL',
  'YACH_WORK_APPKEY',
  'WECHAT_BASE_URL',
  'WECHAT_CORP_ID',
  'WECHAT_AGENT_ID',
  'EMAIL_PROVIDER',
  'EMAIL_FROM',
  'SMTP_HOST',
  'SMTP_PORT',
  'SMTP_SECURE',
  'SMTP_USER',
  'SES_ENDPOINT',
  'SMS_PROVIDER',
  'SMS_COUNTRY_CODE',
  'SNS_ENDPOINT',
  'VOICE_PROVIDER',
  'VOICE_ORIGINATION_IDENTITY',
  'VOICE_ID',
  'PINPOINT_ENDPOINT',
  'NOTIFY_HTTP_TIMEOUT_MS',
  'NOTIFY_LINK_URL',
] as const;

/** Throws on a provider credential in the notification settings: it would end up in the template. */
export function refuseNotifySecrets(env: Record<string, string>): void {
  const found = NOTIFY_SECRET_VARIABLES.filter((k) => k in env);
  if (found.length > 0)
    throw new Error(
      `notifyEnvironment: ${found.join(', ')} ${found.length > 1 ? 'are credentials' : 'is a credential'} ` +
        'and must not be in -c notify (it would land in the template and the Lambda configuration); ' +
        'deploy without it and put it into the secret of the NotifySecretArn output: ' +
        'aws secretsmanager put-secret-value --secret-id <NotifySecretArn> --secret-string \'{"SMTP_PASS":"..."}\'',
    );
}

/** Throws on a variable outside `allowed` (a typo would otherwise be silently ignored at runtime). */
export function checkVariables(what: string, env: Record<string, string>, allowed: readonly string[]): void {
  const unknown = Object.keys(env).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw new Error(`${what}: unknown variable(s) ${unknown.join(', ')}`);
}

/**
 * The AWS permissions the configured providers need, mirroring the runtime defaults: e-mail through
 * SES only when EMAIL_PROVIDER=ses; SMS through SNS unless SMS_PROVIDER=none; voice through Pinpoint
 * SMS Voice v2 unless VOICE_PROVIDER=none, and only once an origination identity is set.
 */
export function notifyProviderStatements(
  scope: Construct,
  env: Record<string, string>,
): iam.PolicyStatement[] {
  const { region, account, partition } = Stack.of(scope);
  const statements: iam.PolicyStatement[] = [];
  if (env.EMAIL_PROVIDER === 'ses') {
    statements.push(
      new iam.PolicyStatement({
        actions: ['ses:SendEmail'],
        // SendEmail is authorised on the sending identity (and on a configuration set, if one applies).
        resources: [
          `arn:${partition}:ses:${region}:${account}:identity/*`,
          `arn:${partition}:ses:${region}:${account}:configuration-set/*`,
        ],
      }),
    );
  }
  if ((env.SMS_PROVIDER ?? 'sns') === 'sns') {
    // SMS goes to phone numbers, which have no ARN; NotResource keeps topics out of reach.
    statements.push(
      new iam.PolicyStatement({ actions: ['sns:Publish'], notResources: [`arn:${partition}:sns:*:*:*`] }),
    );
  }
  if ((env.VOICE_PROVIDER ?? 'pinpoint') === 'pinpoint' && env.VOICE_ORIGINATION_IDENTITY) {
    statements.push(
      new iam.PolicyStatement({
        actions: ['sms-voice:SendVoiceMessage'],
        resources: [
          `arn:${partition}:sms-voice:${region}:${account}:phone-number/*`,
          `arn:${partition}:sms-voice:${region}:${account}:pool/*`,
        ],
      }),
    );
  }
  return statements;
}
