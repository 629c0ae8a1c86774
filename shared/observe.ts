import type { Context } from 'aws-lambda';
import { logger } from './log.ts';
import { flushMetrics } from './metrics.ts';

/**
 * Every Lambda entry that is not built by the HTTP factory (queue consumers, the schedule) is wrapped
 * in this: its log lines carry the invocation's request id and cold-start flag (Powertools Logger
 * context), and the metrics it counted are written once at its end.
 */
export function observed<E, R>(fn: (event: E, context: Context) => Promise<R>) {
  return async (event: E, context: Context): Promise<R> => {
    logger.addContext(context);
    try {
      return await fn(event, context);
    } finally {
      flushMetrics();
    }
  };
}
