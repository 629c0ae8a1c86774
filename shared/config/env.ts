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
  queueUrls: { alarm: string; webhook: string; notify: string };
  /** Allowed |now - timestamp| for signatures, seconds. */
  signSkewSeconds: number;
  /** Whether legacy MD5 signatures are accepted. */
  legacySign: boolean;
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
  /** Webhook retry backoff, seconds, one entry per retry. */
  webhookBackoffSeconds: number[];
  /** Notification retry backoff, seconds. */
  notifyBackoffSeconds: number[];
  webhookTimeoutMs: number;
  /** Present only in the local runtime: enables the test clock routes. */
  local: boolean;
}

function int(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`config: ${name} must be an integer >= ${min}`);
  return n;
}

function bool(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new Error(`config: ${name} must be a boolean`);
}

function list(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const values = raw.split(',').map((v) => Number(v.trim()));
  if (values.some((v) => !Number.isFinite(v) || v < 0)) throw new Error(`config: ${name} must be numbers`);
  return values;
}

function required(name: string): string {
  const raw = process.env[name];
  if (!raw) throw new Error(`config: ${name} is required`);
  return raw;
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
    },
    signSkewSeconds: int('SIGN_SKEW_SECONDS', 300),
    legacySign: bool('LEGACY_SIGN', true),
    sealKey,
    sealKeySecretArn,
    timeZone: process.env.REPORT_TIME_ZONE || 'UTC',
    envName: process.env.ENV_NAME || 'production',
    serviceVersion: process.env.SERVICE_VERSION || '0.1.0',
    blockPrivateWebhooks: bool('BLOCK_PRIVATE_WEBHOOKS', true),
    alarmRateLimit: int('ALARM_RATE_LIMIT', 200, 1),
    taskCacheSeconds: int('TASK_CACHE_SECONDS', 5),
    webhookBackoffSeconds: list('WEBHOOK_BACKOFF_SECONDS', [5, 30, 120, 600, 1800, 3600]),
    notifyBackoffSeconds: list('NOTIFY_BACKOFF_SECONDS', [5, 30, 120, 600, 1800, 3600]),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 200, 1),
    local: bool('TOCSIN_LOCAL', false),
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
