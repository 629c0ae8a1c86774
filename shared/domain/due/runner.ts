import { nowSeconds } from '../../clock.ts';
import { DUE_SHARDS } from '../../db/keys.ts';
import { logger } from '../../log.ts';
import { claimDue, type DueItem, putDue, queryDue } from './repository.ts';

/**
 * What a due handler may ask for: nothing (done), or to run again at `reschedule` (a cycle reminder
 * re-arming, a reminder held while its task is paused).
 */
export type DueResult = undefined | { reschedule: number; payload?: Record<string, unknown> };
export type DueHandler = (item: DueItem, now: number) => Promise<DueResult>;

const MAX_ATTEMPTS = 10;

export interface RunSummary {
  ran: number;
  failed: number;
}

/**
 * Runs everything due by now, shard by shard. Each item is claimed with a conditional delete, so
 * two runners at once never run the same item; a failed item is put back a minute later (up to
 * MAX_ATTEMPTS), so work is never lost to a transient error.
 */
export async function runDueWork(handlers: Record<string, DueHandler>, now = nowSeconds()): Promise<RunSummary> {
  const summary: RunSummary = { ran: 0, failed: 0 };
  await Promise.all(
    Array.from({ length: DUE_SHARDS }, async (_, shard) => {
      for (let page = 0; page < 50; page++) {
        const items = await queryDue(shard, now);
        if (items.length === 0) return;
        for (const item of items) await runOne(item, handlers, now, summary);
        if (items.length < 100) return;
      }
    }),
  );
  return summary;
}

async function runOne(item: DueItem, handlers: Record<string, DueHandler>, now: number, summary: RunSummary) {
  const handler = handlers[item.kind];
  if (!handler) {
    // Left in place: a kind whose handler is not deployed yet must not be lost.
    logger.warn('no handler for due work; left for later', { kind: item.kind, ref: item.ref });
    return;
  }
  if (!(await claimDue(item))) return;
  try {
    const result = await handler(item, now);
    summary.ran++;
    if (result) {
      await putDue({ ...item, due_at: result.reschedule, payload: result.payload ?? item.payload, attempts: 0 });
    }
  } catch (err) {
    summary.failed++;
    const attempts = (item.attempts ?? 0) + 1;
    logger.error('due work failed', { kind: item.kind, ref: item.ref, attempts, error: err as Error });
    if (attempts < MAX_ATTEMPTS) await putDue({ ...item, due_at: now + 60, attempts });
  }
}
