import type { Context } from 'aws-lambda';
import { nowSeconds } from '#shared/clock.ts';
import { observed } from '#shared/observe.ts';
import { dispatchDue, dueMessages } from '#shared/domain/due/runner.ts';
import { logger } from '#shared/log.ts';
import { publish } from '#shared/messaging/sqs.ts';
import { dueHandlers } from './due-handlers.ts';

/**
 * EventBridge, every minute: leases the due work (reminders, delayed compression flushes, delay
 * recoveries, pause expiries, heartbeat checks) and puts it on the due queue, whose consumer runs it;
 * then keeps doing so as more falls due, until shortly before its timeout. Invoked by anything else
 * (the local test clock, `npm run invoke`), it makes one pass over what is due now.
 */
export const handler = observed(
  async (event: { source?: string }, context?: Context) => {
    const polling = event?.source === 'aws.events' && context !== undefined;
    const summary = await dispatchDue({
      now: nowSeconds,
      kinds: new Set(Object.keys(dueHandlers)),
      send: (items) =>
        publish(
          'due',
          dueMessages(items).map((body) => ({ body })),
        ),
      ...(polling ? { remainingMs: () => context.getRemainingTimeInMillis() } : {}),
    });
    if (summary.dispatched) logger.info('due work dispatched', { ...summary });
    return summary;
  },
  // One run, failed when it threw (the items it dispatched are the due consumer's to count).
  (_event, summary) => ({ items: 1, failures: summary ? 0 : 1 }),
);
