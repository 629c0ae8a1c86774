import type { Context } from 'aws-lambda';
import { logger } from './log.ts';
import { countByVersion, flushMetrics } from './metrics.ts';

/** What an invocation worked on: the items of its batch, and those that failed. */
export interface Tally {
  items: number;
  failures: number;
}

/**
 * A queue consumer's tally: the records of its SQS batch, and its partial batch failures (every
 * record, when it threw: the whole batch comes back).
 */
export function sqsTally(event: unknown, result: unknown): Tally {
  const records = (event as { Records?: unknown[] } | undefined)?.Records?.length ?? 0;
  if (result === undefined) return { items: records, failures: records };
  const failures = (result as { batchItemFailures?: unknown[] } | undefined)?.batchItemFailures?.length ?? 0;
  return { items: records, failures };
}

/**
 * Every Lambda entry that is not built by the HTTP factory (queue consumers, the schedule) is wrapped
 * in this: its log lines carry the invocation's request id and cold-start flag (Powertools Logger
 * context), and the metrics it counted are written once at its end, with its `tally` per function
 * version (`BatchItems`, `BatchItemFailures`: a gradual deployment's rollback alarms read them).
 */
export function observed<E, R>(
  fn: (event: E, context: Context) => Promise<R>,
  tally: (event: E, result: R | undefined) => Tally = sqsTally,
) {
  return async (event: E, context: Context): Promise<R> => {
    logger.addContext(context);
    let result: R | undefined;
    try {
      result = await fn(event, context);
      return result;
    } finally {
      const { items, failures } = tally(event, result);
      if (items > 0) countByVersion('BatchItems', items);
      if (failures > 0) countByVersion('BatchItemFailures', failures);
      flushMetrics();
    }
  };
}
