import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { METRICS, type MetricName } from './contracts/metrics.ts';
import { config } from './config/env.ts';
import { logger } from './log.ts';

/**
 * Service metrics through Powertools Metrics (CloudWatch embedded metric format, namespace `Tocsin`;
 * the list is shared/contracts/metrics.ts, which the stack's dashboard reads too):
 * counted in memory during an invocation and written once at its end (every invocation that counted
 * something: a container that goes idle loses nothing), one log line per metric and dimension set, so
 * a consumer batch of a hundred alarms costs a few lines, not a hundred. Every metric carries the
 * `service` dimension and the `environment` dimension (the deployment's ENV_NAME). Off on the local
 * stack (no CloudWatch there; `TOCSIN_STATS=1` counts calls instead).
 *
 * - `AlarmsAccepted` (count): alarms the pipeline took from the alarm queue (every accepted alarm
 *   arrives there once, or again after a failure);
 * - `AlarmsRefused` (count, `code`): reports the door refused, by envelope code (401, 4000, 4001, ...);
 * - `PipelineOutcome` (count, `outcome`): what the pipeline decided (compress_disable, compressed,
 *   recovery, rejected, drop, ...);
 * - `WebhookDelivery` (count, `outcome`): webhook attempts by outcome; `WebhookLatency` (ms) per POST;
 * - `ChannelDelivery` (count, `channel`, `outcome`): notification attempts per channel;
 * - `IntakeReports` / `IntakeRefused` and `BatchItems` / `BatchItemFailures` (count, `function`,
 *   `version`, and `function` alone, in one line per invocation): what each version of a function
 *   answered or failed, for the rollback alarms of a gradual deployment (countByVersion);
 * - `PipelineLagMs` (ms): from a report's acceptance to the end of its processing, per alarm.
 * Dead-letter queue depth is SQS's own metric (the stack's alarms and dashboard read it).
 */
export const METRIC_NAMESPACE = METRICS.namespace;

const counts = new Map<string, { name: MetricName; dims: Record<string, string>; value: number }>();
/** Values of the distribution metrics (ms), by name. */
const values = new Map<MetricName, number[]>();

let metrics: Metrics | undefined;
function instance(): Metrics | undefined {
  if (config().local) return undefined;
  metrics ??= new Metrics({
    namespace: METRIC_NAMESPACE,
    serviceName: METRICS.service,
    defaultDimensions: { [METRICS.environmentDimension]: config().envName },
  });
  return metrics;
}

/** Counts `value` for a metric and its dimensions (written at the end of the invocation). */
export function count(name: MetricName, dims: Record<string, string | number> = {}, value = 1): void {
  const d = Object.fromEntries(Object.entries(dims).map(([k, v]) => [k, String(v)]));
  const key = `${name}|${JSON.stringify(d)}`;
  const c = counts.get(key);
  if (c) c.value += value;
  else counts.set(key, { name, dims: d, value });
}

/** The counts of this invocation's function version (countByVersion), by metric. */
const byVersion = new Map<MetricName, number>();

/**
 * Counts `value` for a metric of one function version (IntakeReports, BatchItems, ...), written in one
 * line with two dimension sets: `function` and `version` (Lambda's AWS_LAMBDA_FUNCTION_NAME and
 * _VERSION), and `function` alone, so that an alarm can set one version against all of them.
 */
export function countByVersion(name: MetricName, value = 1): void {
  byVersion.set(name, (byVersion.get(name) ?? 0) + value);
}

/** Records one value (ms) of a distribution metric: a webhook POST's duration, an alarm's lag. */
export function measure(name: MetricName, ms: number): void {
  const list = values.get(name);
  if (list) list.push(ms);
  else values.set(name, [ms]);
}

/** Records one webhook POST's duration. */
export function webhookLatency(ms: number): void {
  measure(METRICS.webhookLatency.name, ms);
}

/**
 * Writes what was counted, at the end of every invocation (no-op locally and when nothing was
 * counted): one line per metric and dimension set, and one for the distributions (latencies, lags).
 */
export function flushMetrics(): void {
  if (counts.size === 0 && values.size === 0 && byVersion.size === 0) return;
  try {
    const m = instance();
    if (!m) return;
    for (const { name, dims, value } of counts.values()) {
      const single = m.singleMetric();
      for (const [k, v] of Object.entries(dims)) single.addDimension(k, v);
      single.addMetric(name, MetricUnit.Count, value);
    }
    if (byVersion.size > 0) {
      // One line, two dimension sets (a single-metric instance would write a line per metric).
      const fn = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'local';
      m.addDimensions({ function: fn, version: process.env.AWS_LAMBDA_FUNCTION_VERSION ?? '$LATEST' });
      m.addDimensions({ function: fn });
      for (const [name, value] of byVersion) m.addMetric(name, MetricUnit.Count, value);
      m.publishStoredMetrics();
    }
    if (values.size > 0) {
      for (const [name, list] of values)
        for (const ms of list) m.addMetric(name, MetricUnit.Milliseconds, ms);
      m.publishStoredMetrics();
    }
  } catch (err) {
    // Metrics never fail an invocation.
    logger.warn('could not write metrics', { error: err as Error });
  } finally {
    counts.clear();
    values.clear();
    byVersion.clear();
  }
}
