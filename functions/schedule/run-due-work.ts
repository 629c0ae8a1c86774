import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { dueHandlers } from './due-handlers.ts';
import { runDueWork } from '#shared/domain/due/runner.ts';
import { logger } from '#shared/log.ts';

/** EventBridge, every minute: reminders, delayed compression flushes, delay recoveries, pause expiries. */
export const handler = observed(
  async () => {
    await loadSealKey();
    const summary = await runDueWork(dueHandlers);
    if (summary.ran || summary.failed) logger.info('due work', { ...summary });
    return summary;
  },
  // The items it ran and those that failed; a run that threw counts one failure.
  (_event, summary) => (summary ? { items: summary.ran + summary.failed, failures: summary.failed } : { items: 1, failures: 1 }),
);
