import { sdkClient } from '../platform.ts';

/**
 * Runtime configuration, parsed once from the environment (on first use, i.e. at cold start) and
 * failing fast on bad values. The local runtime sets these variables before it imports any handler.
 */
export interface Config {
  region: string;
  tableName: string;
  /** Endpoints for local emulators; undefined in AWS. */
  dynamoEndpoint?: string;
  sqsEndpoint?: string;
  queueUrls: { alarm: string; webhook: string; notify: string; replay: string };
  /** The queues' dead-letter queues: set only for the functions that list or redrive dead letters. */
  dlqUrls: { alarm: string; webhook: string; notify: string; replay: string };
  /** Allowed |now - timestamp| for signatures, seconds. */
  signSkewSeconds: number;
  /** The same for the alarm endpoints (`/alarm/*`): the window the original system documented. */
  alarmSignSkewSeconds: number;
  /** Whether legacy MD5 signatures are accepted. */
  legacySign: boolean;
  /**
   * Which apps must sign every request bound to it (API guide §3.1.1): only those that opted in
   * (`optional`), also every app holding a grant (`grants`), or every app (`all`).
   */
  appRequestSignature: 'optional' | 'grants' | 'all';
  /**
   * Whether apps need grants for the interface's workflow routes too: `read` to show a workflow,
   * `operate` to operate one without naming `created_by` (the app acting for itself).
   */
  strictAppGrants: boolean;
  /** Days a fixed signature of the monitor adapters stays valid after its timestamp. */
  fixedSignMaxDays: number;
  /** Key that seals stored tokens and secrets (32 bytes). */
  sealKey?: Buffer;
  /** Secrets Manager secret holding the seal key (AWS). */
  sealKeySecretArn?: string;
  /** IANA time zone for report_time. */
  timeZone: string;
  /** `{common.env}` in templates. */
  envName: string;
  serviceVersion: string;
  /** Refuse webhook URLs resolving to private/loopback/link-local addresses. */
  blockPrivateWebhooks: boolean;
  /** Default alarm rate limit per task, alarms per second. */
  alarmRateLimit: number;
  /** Seconds the alarm endpoint caches a task read. */
  taskCacheSeconds: number;
  /**
   * How long the alarm pipeline retries a metric commit it keeps losing to other consumers before it
   * hands the alarms back to the queue, ms (never into the last 10 s of the invocation).
   */
  alarmContentionMs: number;
  /** Webhook retry backoff, seconds, one entry per retry. */
  webhookBackoffSeconds: number[];
  /** Notification retry backoff, seconds. */
  notifyBackoffSeconds: number[];
  webhookTimeoutMs: number;
  /** Present only in the local runtime: enables the test clock routes. */
  local: boolean;
  /** Notification providers (API guide §11.1); a provider left unset is reported as skipped. */
  notify: NotifyConfig;
  /**
   * The service's address in the links its messages carry (PUBLIC_BASE_URL, no trailing slash): the
   * deployed API's URL (the CDK stack sets it), the stack's own on `npm start`. Unset: no claim links.
   */
  publicBaseUrl?: string;
  /** Claim links (API guide §11.7). */
  claimLink: ClaimLinkConfig;
}

/** Claim links: keys, lifetime and rate limits (API guide §11.7, docs/configuration.md). */
export interface ClaimLinkConfig {
  /** Key ids (CLAIM_LINK_KEYS): the first signs new links, the second, if any, is still accepted. */
  keyIds: number[];
  /** How long a link stays good, seconds (CLAIM_LINK_HOURS). */
  ttlSeconds: number;
  /** Requests to /claim per minute from one source address. */
  addressPerMinute: number;
  /** Claims (POST) per minute with one link. */
  linkPerMinute: number;
}

/** Notification channel providers. `undefined` = not configured in this deployment. */
export interface NotifyConfig {
  /** Robot webhook base URLs (`<base>?access_token=...`). */
  robots: { dinggroup?: string; yachgroup?: string };
  /** Messages per robot per minute we allow ourselves (DingTalk allows 20). */
  robotMaxPerMinute: number;
  /** Seconds a robot that answered with its rate-limit code is left alone. */
  robotBlockSeconds: number;
  dingworker?: { baseUrl: string; appKey: string; appSecret: string; agentId: string };
  yachworker?: { baseUrl: string; appKey: string; appSecret: string };
  wechat?: { baseUrl: string; corpId: string; corpSecret: string; agentId: string };
  email?:
    | {
        provider: 'smtp';
        from: string;
        host: string;
        port: number;
        secure: boolean;
        user?: string;
        pass?: string;
      }
    | { provider: 'ses'; from: string; endpoint?: string };
  sms?: { provider: 'sns'; endpoint?: string; countryCode: string };
  phone?: {
    provider: 'pinpoint';
    endpoint?: string;
    originationIdentity: string;
    voiceId: string;
    countryCode: string;
  };
  /** Timeout of one provider HTTP call. */
  httpTimeoutMs: number;
  /** Optional link on ActionCard buttons. */
  linkUrl?: string;
}

function int(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`config: ${name} must be an integer >= ${min}`);
  return n;
}

/**
 * Days processed alarms (records and the alarm log) are kept unless a task sets its own
 * (`ALARM_RETENTION_DAYS`, default 90). Apart from `Config`: the pure pipeline needs only this.
 */
export function defaultAlarmRetentionDays(): number {
  return int('ALARM_RETENTION_DAYS', 90, 1);
}

function bool(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new Error(`config: ${name} must be a boolean`);
}

function oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw))
    throw new Error(`config: ${name} must be ${values.join(', ')}`);
  return raw as T;
}

function list(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const values = raw.split(',').map((v) => Number(v.trim()));
  if (values.some((v) => !Number.isFinite(v) || v < 0)) throw new Error(`config: ${name} must be numbers`);
  return values;
}

function timeZone(name: string, fallback: string): string {
  const tz = process.env[name] || fallback;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw new Error(`config: ${name} must be an IANA time zone, got ${tz}`);
  }
  return tz;
}

/** CLAIM_LINK_KEYS: one or two key ids from 1 to 255, the signing one first (`2,1` while rotating). */
function claimLinkKeys(name: string): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return [1];
  const ids = raw.split(',').map((v) => Number(v.trim()));
  if (ids.length > 2 || ids.some((id) => !Number.isInteger(id) || id < 1 || id > 255) || ids[0] === ids[1])
    throw new Error(
      `config: ${name} must be one or two distinct key ids from 1 to 255, the signing one first`,
    );
  return ids;
}

/** CLAIM_LINK_HOURS: 1 to 720 (30 days), default 24. */
function claimLinkHours(name: string): number {
  const hours = int(name, 24, 1);
  if (hours > 720) throw new Error(`config: ${name} must be an integer from 1 to 720`);
  return hours;
}

/** PUBLIC_BASE_URL: an http(s) URL, optionally with a path; no query, no fragment. */
function publicBaseUrl(name: string): string | undefined {
  const raw = opt(name);
  if (raw === undefined) return undefined;
  if (!/^https?:\/\/[^\s/?#]+(?:\/[^\s?#]*)?$/.test(raw))
    throw new Error(`config: ${name} must be an http(s) URL without query or fragment`);
  return raw.replace(/\/+$/, '');
}

function required(name: string): string {
  const raw = process.env[name];
  if (!raw) throw new Error(`config: ${name} is required`);
  return raw;
}

function opt(name: string): string | undefined {
  return process.env[name] || undefined;
}

/** A base URL, its default, or `none` to switch the provider off. */
function baseUrl(name: string, fallback: string): string | undefined {
  const raw = opt(name) ?? fallback;
  if (raw === 'none') return undefined;
  if (!/^https?:\/\/\S+$/.test(raw)) throw new Error(`config: ${name} must be an http(s) URL or none`);
  return raw.replace(/\/+$/, '');
}

/**
 * Provider credentials. In AWS they come from the Secrets Manager secret named by NOTIFY_SECRETS_ARN
 * (read once per cold start by loadNotifySecrets, in the notification consumer only); the plain
 * variables of the same names remain for the local runtime and tests. A secret value wins over the
 * variable; an empty one counts as unset.
 */
export const NOTIFY_SECRET_NAMES = [
  'DING_WORK_APPSECRET',
  'YACH_WORK_APPSECRET',
  'WECHAT_CORP_SECRET',
  'SMTP_PASS',
] as const;
export type NotifySecretName = (typeof NOTIFY_SECRET_NAMES)[number];
export type NotifySecrets = Partial<Record<NotifySecretName, string>>;

/** What loadNotifySecrets read; empty until then (and for good when NOTIFY_SECRETS_ARN is unset). */
let notifySecrets: NotifySecrets = {};
let notifySecretsLoad: Promise<void> | undefined;
let notifySecretsLoaded = false;

export function loadNotifyConfig(local: boolean, secrets: NotifySecrets = notifySecrets): NotifyConfig {
  const secret = (name: NotifySecretName) => secrets[name] || opt(name);
  const ding = {
    appKey: opt('DING_WORK_APPKEY'),
    appSecret: secret('DING_WORK_APPSECRET'),
    agentId: opt('DING_WORK_AGENT_ID'),
  };
  const dingBase = baseUrl('DING_WORK_BASE_URL', 'https://oapi.dingtalk.com');
  const yach = { appKey: opt('YACH_WORK_APPKEY'), appSecret: secret('YACH_WORK_APPSECRET') };
  const yachBase = baseUrl('YACH_WORK_BASE_URL', 'https://yach-oapi.zhiyinlou.com');
  const wx = {
    corpId: opt('WECHAT_CORP_ID'),
    corpSecret: secret('WECHAT_CORP_SECRET'),
    agentId: opt('WECHAT_AGENT_ID'),
  };
  const wxBase = baseUrl('WECHAT_BASE_URL', 'https://qyapi.weixin.qq.com/cgi-bin');

  // E-mail: EMAIL_PROVIDER smtp | ses | none; by default SMTP when SMTP_HOST is set.
  const emailProvider = opt('EMAIL_PROVIDER') ?? (opt('SMTP_HOST') ? 'smtp' : 'none');
  if (!['smtp', 'ses', 'none'].includes(emailProvider))
    throw new Error('config: EMAIL_PROVIDER must be smtp, ses or none');
  let email: NotifyConfig['email'];
  if (emailProvider !== 'none') {
    const from = opt('EMAIL_FROM');
    if (!from) throw new Error('config: EMAIL_FROM is required when e-mail is configured');
    if (emailProvider === 'smtp') {
      const host = opt('SMTP_HOST');
      if (!host) throw new Error('config: SMTP_HOST is required for EMAIL_PROVIDER=smtp');
      const secure = bool('SMTP_SECURE', false);
      email = {
        provider: 'smtp',
        from,
        host,
        port: int('SMTP_PORT', secure ? 465 : 587, 1),
        secure,
        user: opt('SMTP_USER'),
        pass: secret('SMTP_PASS'),
      };
    } else {
      email = { provider: 'ses', from, endpoint: opt('SES_ENDPOINT') };
    }
  }

  // SMS (SNS) and phone (Pinpoint SMS Voice v2) default on in AWS, off in the local runtime.
  const countryCode = opt('SMS_COUNTRY_CODE') ?? '+86';
  if (!/^\+\d{1,4}$/.test(countryCode)) throw new Error('config: SMS_COUNTRY_CODE must look like +86');
  const smsProvider = opt('SMS_PROVIDER') ?? (local ? 'none' : 'sns');
  if (!['sns', 'none'].includes(smsProvider)) throw new Error('config: SMS_PROVIDER must be sns or none');
  const voiceProvider = opt('VOICE_PROVIDER') ?? (local ? 'none' : 'pinpoint');
  if (!['pinpoint', 'none'].includes(voiceProvider))
    throw new Error('config: VOICE_PROVIDER must be pinpoint or none');
  const origination = opt('VOICE_ORIGINATION_IDENTITY');

  return {
    robots: {
      dinggroup: baseUrl('ROBOT_DING_BASE_URL', 'https://oapi.dingtalk.com/robot/send'),
      yachgroup: baseUrl('ROBOT_YACH_BASE_URL', 'https://yach-oapi.zhiyinlou.com/robot/send'),
    },
    robotMaxPerMinute: int('ROBOT_MAX_PER_MINUTE', 20, 1),
    robotBlockSeconds: int('ROBOT_BLOCK_SECONDS', 60, 1),
    dingworker:
      dingBase && ding.appKey && ding.appSecret && ding.agentId
        ? { baseUrl: dingBase, appKey: ding.appKey, appSecret: ding.appSecret, agentId: ding.agentId }
        : undefined,
    yachworker:
      yachBase && yach.appKey && yach.appSecret
        ? { baseUrl: yachBase, appKey: yach.appKey, appSecret: yach.appSecret }
        : undefined,
    wechat:
      wxBase && wx.corpId && wx.corpSecret && wx.agentId
        ? { baseUrl: wxBase, corpId: wx.corpId, corpSecret: wx.corpSecret, agentId: wx.agentId }
        : undefined,
    email,
    sms: smsProvider === 'sns' ? { provider: 'sns', endpoint: opt('SNS_ENDPOINT'), countryCode } : undefined,
    phone:
      voiceProvider === 'pinpoint' && origination
        ? {
            provider: 'pinpoint',
            endpoint: opt('PINPOINT_ENDPOINT'),
            originationIdentity: origination,
            voiceId: opt('VOICE_ID') ?? 'ZHIYU',
            countryCode,
          }
        : undefined,
    httpTimeoutMs: int('NOTIFY_HTTP_TIMEOUT_MS', 5000, 1),
    linkUrl: opt('NOTIFY_LINK_URL'),
  };
}

export function loadConfig(): Config {
  const sealKeyRaw = process.env.SEAL_KEY;
  const sealKey = sealKeyRaw ? Buffer.from(sealKeyRaw, 'base64') : undefined;
  if (sealKey && sealKey.length !== 32) throw new Error('config: SEAL_KEY must be 32 bytes, base64');
  const sealKeySecretArn = process.env.SEAL_KEY_SECRET_ARN || undefined;
  if (!sealKey && !sealKeySecretArn) throw new Error('config: SEAL_KEY or SEAL_KEY_SECRET_ARN is required');
  return {
    region: process.env.AWS_REGION || 'us-east-1',
    tableName: required('TABLE_NAME'),
    dynamoEndpoint: process.env.DYNAMODB_ENDPOINT || undefined,
    sqsEndpoint: process.env.SQS_ENDPOINT || undefined,
    queueUrls: {
      alarm: process.env.ALARM_QUEUE_URL || '',
      webhook: process.env.WEBHOOK_QUEUE_URL || '',
      notify: process.env.NOTIFY_QUEUE_URL || '',
      replay: process.env.REPLAY_QUEUE_URL || '',
    },
    dlqUrls: {
      alarm: process.env.ALARM_DLQ_URL || '',
      webhook: process.env.WEBHOOK_DLQ_URL || '',
      notify: process.env.NOTIFY_DLQ_URL || '',
      replay: process.env.REPLAY_DLQ_URL || '',
    },
    signSkewSeconds: int('SIGN_SKEW_SECONDS', 300),
    alarmSignSkewSeconds: int('ALARM_SIGN_SKEW_SECONDS', 1800),
    legacySign: bool('LEGACY_SIGN', true),
    appRequestSignature: oneOf('APP_REQUEST_SIGNATURE', ['optional', 'grants', 'all'] as const, 'optional'),
    strictAppGrants: bool('STRICT_APP_GRANTS', false),
    fixedSignMaxDays: int('FIXED_SIGN_MAX_DAYS', 365, 1),
    sealKey,
    sealKeySecretArn,
    timeZone: timeZone('REPORT_TIME_ZONE', 'UTC'),
    envName: process.env.ENV_NAME || 'production',
    serviceVersion: process.env.SERVICE_VERSION || '0.1.0',
    blockPrivateWebhooks: bool('BLOCK_PRIVATE_WEBHOOKS', true),
    alarmRateLimit: int('ALARM_RATE_LIMIT', 200, 1),
    taskCacheSeconds: int('TASK_CACHE_SECONDS', 5),
    alarmContentionMs: int('ALARM_CONTENTION_MS', 20_000),
    webhookBackoffSeconds: list('WEBHOOK_BACKOFF_SECONDS', [5, 30, 120, 600, 1800, 3600]),
    notifyBackoffSeconds: list('NOTIFY_BACKOFF_SECONDS', [5, 30, 120, 600, 1800, 3600]),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 200, 1),
    local: bool('TOCSIN_LOCAL', false),
    notify: loadNotifyConfig(bool('TOCSIN_LOCAL', false)),
    publicBaseUrl: publicBaseUrl('PUBLIC_BASE_URL'),
    claimLink: {
      keyIds: claimLinkKeys('CLAIM_LINK_KEYS'),
      ttlSeconds: claimLinkHours('CLAIM_LINK_HOURS') * 3600,
      addressPerMinute: int('CLAIM_LINK_ADDRESS_PER_MINUTE', 120, 1),
      linkPerMinute: int('CLAIM_LINK_PER_MINUTE', 10, 1),
    },
  };
}

let cached: Config | undefined;

/** The process's configuration, parsed on first use. */
export function config(): Config {
  cached ??= loadConfig();
  return cached;
}

/** For the local runtime and tests: forget the parsed configuration after changing the env. */
export function resetConfig(): void {
  cached = undefined;
}

/**
 * The provider credentials in a secret's string: a JSON object whose keys are NOTIFY_SECRET_NAMES and
 * whose values are strings. Errors never quote the secret (JSON.parse's message may).
 */
export function parseNotifySecrets(secretString: string): NotifySecrets {
  let value: unknown;
  try {
    value = JSON.parse(secretString);
  } catch {
    throw new Error('config: the NOTIFY_SECRETS_ARN secret must be a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('config: the NOTIFY_SECRETS_ARN secret must be a JSON object');
  const secrets: NotifySecrets = {};
  for (const [key, v] of Object.entries(value)) {
    if (!(NOTIFY_SECRET_NAMES as readonly string[]).includes(key))
      throw new Error(
        `config: unknown key ${JSON.stringify(key)} in the NOTIFY_SECRETS_ARN secret (allowed: ${NOTIFY_SECRET_NAMES.join(', ')})`,
      );
    if (typeof v !== 'string')
      throw new Error(`config: ${key} in the NOTIFY_SECRETS_ARN secret must be a string`);
    if (v !== '') secrets[key as NotifySecretName] = v;
  }
  return secrets;
}

export interface NotifySecretsDeps {
  /** The SecretString of a Secrets Manager secret; undefined while it has no value. */
  fetchSecret(secretId: string, region: string): Promise<string | undefined>;
}

/**
 * The stack creates the provider secret without a value (the operator puts one): reading it then
 * fails with ResourceNotFoundException, which means "no credentials yet", not a broken consumer.
 */
export async function fetchSecret(secretId: string, region: string): Promise<string | undefined> {
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  try {
    const secrets = sdkClient('secretsmanager', (s) => new SecretsManagerClient({ region, ...s }));
    const out = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
    return out.SecretString;
  } catch (err) {
    if ((err as Error).name === 'ResourceNotFoundException') return undefined;
    throw err;
  }
}

/**
 * The notification consumer's cold start: when NOTIFY_SECRETS_ARN is set, read that secret once and let
 * its values override the credential variables (also in an already parsed config()); a secret with no
 * value yet overrides nothing. Without the ARN (local runtime, tests) nothing is read. A failed read is
 * not remembered, so the next invocation retries.
 */
export function loadNotifySecrets(deps: NotifySecretsDeps = { fetchSecret }): Promise<void> {
  notifySecretsLoad ??= (async () => {
    const arn = process.env.NOTIFY_SECRETS_ARN;
    if (arn) {
      // A secret never filled (or filled with an empty string) holds no credentials: no provider needs one.
      const text = await deps.fetchSecret(arn, process.env.AWS_REGION || 'us-east-1');
      const secrets = text ? parseNotifySecrets(text) : {};
      notifySecrets = secrets;
      if (cached) cached.notify = loadNotifyConfig(cached.local, secrets);
    }
    notifySecretsLoaded = true;
  })().catch((err: unknown) => {
    notifySecretsLoad = undefined;
    throw err;
  });
  return notifySecretsLoad;
}

/** Throws when NOTIFY_SECRETS_ARN is set but loadNotifySecrets has not completed: credentials would be missing. */
export function assertNotifySecretsLoaded(): void {
  if (process.env.NOTIFY_SECRETS_ARN && !notifySecretsLoaded)
    throw new Error('notification secrets not loaded: call loadNotifySecrets() first');
}

/** Tests: forget the loaded provider credentials. */
export function resetNotifySecrets(): void {
  notifySecrets = {};
  notifySecretsLoad = undefined;
  notifySecretsLoaded = false;
}
