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
} as const;

export type MetricKey = Exclude<
  keyof typeof METRICS,
  'namespace' | 'service' | 'serviceDimension' | 'environmentDimension'
>;
export type MetricName = (typeof METRICS)[MetricKey]['name'];
