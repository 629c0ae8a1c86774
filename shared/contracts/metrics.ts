/**
 * The service's custom CloudWatch metrics: the one list the code that writes them (shared/metrics.ts,
 * Powertools Metrics) and the stack that graphs them (infra/constructs/observability.ts) both read.
 * Part of the contracts floor (shared/contracts): pure data, so a function's bundle carries these
 * names and nothing of the deployment.
 *
 * Every metric carries the `service` dimension (value `service`, added by Powertools) and the
 * `environment` dimension (the stack's envName, ENV_NAME); the dimensions below are the ones a metric
 * carries on top of those two, so an alarm addresses a metric by service + environment (+ its own).
 * Units are CloudWatch unit names (Powertools MetricUnit values).
 */
export const METRICS = {
  /** POWERTOOLS_METRICS_NAMESPACE of every function. */
  namespace: 'Tocsin',
  /** POWERTOOLS_SERVICE_NAME of every function (and the `service` dimension's value). */
  service: 'tocsin',
  serviceDimension: 'service',
  /** The dimension naming the deployment (ENV_NAME) on every metric. */
  environmentDimension: 'environment',
  /** Alarms the pipeline took from the alarm queue. */
  alarmsAccepted: { name: 'AlarmsAccepted', unit: 'Count', dimensions: [] },
  /** Reports refused at the door, by envelope code (401, 4000, 4001, ...). */
  alarmsRefused: { name: 'AlarmsRefused', unit: 'Count', dimensions: ['code'] },
  /** What the pipeline decided (compressed, recovery, rejected, drop, ...). */
  pipelineOutcome: { name: 'PipelineOutcome', unit: 'Count', dimensions: ['outcome'] },
  /** Alarms handed back to the alarm queue because other consumers kept committing their metric first. */
  alarmsHandedBack: { name: 'AlarmsHandedBack', unit: 'Count', dimensions: [] },
  /**
   * Log entries of the alarm path that could not be written after retries: the alarm log (the history),
   * the records of webhook first attempts and of notifications sent; the work itself was done.
   */
  alarmLogLost: { name: 'AlarmLogLost', unit: 'Count', dimensions: [] },
  /** Alarms the door admitted against its container's own count: the shared rate-limit count was unreachable. */
  rateLimitDegraded: { name: 'RateLimitDegraded', unit: 'Count', dimensions: [] },
  /** Due work (reminders, flushes, ...) that failed its last attempt and was kept for an operator. */
  dueWorkBuried: { name: 'DueWorkBuried', unit: 'Count', dimensions: [] },
  /** Webhook attempts by outcome. */
  webhookDelivery: { name: 'WebhookDelivery', unit: 'Count', dimensions: ['outcome'] },
  /** Duration of one webhook POST. */
  webhookLatency: { name: 'WebhookLatency', unit: 'Milliseconds', dimensions: [] },
  /**
   * Sign-in and credential events (shared/domain/auth/audit.ts): signin, signin-failed, lockout,
   * unlock, password-change, sso-link, grant-change, ... The stack alarms on a spike of signin-failed.
   */
  authEvents: { name: 'AuthEvents', unit: 'Count', dimensions: ['event'] },
  /** Notification attempts per channel and outcome. */
  channelDelivery: { name: 'ChannelDelivery', unit: 'Count', dimensions: ['channel', 'outcome'] },
  /**
   * Answers of an alarm intake function, per function and per version (the deployment's rollback
   * alarms compare a new version with all of them: a refusal is an HTTP 200 with a code). Written twice:
   * with `function` and `version`, and with `function` alone (every version together).
   */
  intakeReports: { name: 'IntakeReports', unit: 'Count', dimensions: ['function', 'version'] },
  /** Of those, the refusals (every answer with a code other than 0). */
  intakeRefused: { name: 'IntakeRefused', unit: 'Count', dimensions: ['function', 'version'] },
  /**
   * Messages of a queue consumer's batches (the due runner: items of due work it ran), per function
   * and version, written as the intake ones are.
   */
  batchItems: { name: 'BatchItems', unit: 'Count', dimensions: ['function', 'version'] },
  /** Of those, the ones that failed (partial batch failures; all of a batch that threw). */
  batchItemFailures: { name: 'BatchItemFailures', unit: 'Count', dimensions: ['function', 'version'] },
  /** From the report's acceptance to the end of its processing by the pipeline, per alarm (ms). */
  pipelineLag: { name: 'PipelineLagMs', unit: 'Milliseconds', dimensions: [] },
  /**
   * Answers 429 (API Gateway's throttling) of the alarm intake routes, from the API's access log (a
   * metric filter, dimension `api`: the HTTP API's id, since a filter cannot set the others).
   */
  ingestThrottled: { name: 'IngestThrottled', unit: 'Count', dimensions: ['api'] },
} as const;

export type MetricKey = Exclude<
  keyof typeof METRICS,
  'namespace' | 'service' | 'serviceDimension' | 'environmentDimension'
>;
export type MetricName = (typeof METRICS)[MetricKey]['name'];
