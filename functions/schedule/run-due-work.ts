import { observed } from '#shared/observe.ts';
import { loadSealKey } from '#shared/domain/auth/seal.ts';
import { dueHandlers } from './due-handlers.ts';
import { runDueWork } from '#shared/domain/due/runner.ts';
import { logger } from '#shared/log.ts';

/** EventBridge, every minute: reminders, delayed compression flushes, delay recoveries, pause expiries. */
export const handler = observed(async () => {
  await loadSealKey();
  const summary = await runDueWork(dueHandlers);
  if (summary.ran || summary.failed) logger.info('due work', { ...summary });
  return summary;
});
