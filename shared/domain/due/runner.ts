import { nowSeconds } from '../../clock.ts';
import { DUE_SHARDS } from '../../db/keys.ts';
import { logger } from '../../log.ts';
import { count } from '../../metrics.ts';
import {
  buryDue,
  completeDue,
  type DueItem,
  leaseDue,
  putDue,
  queryDuePage,
  retryDue,
} from './repository.ts';

/**
 * What a due handler may ask for: nothing (done), or to run again at `reschedule` (a cycle reminder
 * re-arming, a reminder held while its task is paused).
 */
export type DueResult = undefined | { reschedule: number; payload?: Record<string, unknown> };
export type DueHandler = (item: DueItem, now: number) => Promise<DueResult>;

/**
 * What a handler throws for an item that can never run (its payload is not what its kind reads): the
 * item is kept under DUEDEAD at once, with the reason, instead of failing MAX_ATTEMPTS times.
 */
export class MalformedDueWork extends Error {
  override name = 'MalformedDueWork';
}

/** Failed runs before the item is moved to `DUEDEAD#<kind>` for an operator. */
export const MAX_ATTEMPTS = 10;
/** How long a runner holds an item; longer than the scheduled function's timeout. */
export const LEASE_SECONDS = 120;
const RETRY_SECONDS = 60;
const MAX_PAGES = 50;

export interface RunSummary {
  ran: number;
  failed: number;
}

/**
 * Runs everything due by now, shard by shard, page by page. Each item is leased with a conditional
 * write, so two runners at once never run the same item, and it is removed only once its work is
 * done: a runner that dies mid-way loses nothing (the lease expires and the next run takes over). A
 * failed item is retried a minute later, at most MAX_ATTEMPTS times, then kept under DUEDEAD (a
 * malformed one at once).
 * Items of a kind without a handler, and items leased by another runner, are passed over.
 */
export async function runDueWork(
  handlers: Record<string, DueHandler>,
  now = nowSeconds(),
): Promise<RunSummary> {
  const summary: RunSummary = { ran: 0, failed: 0 };
  await Promise.all(
    Array.from({ length: DUE_SHARDS }, async (_, shard) => {
      let start: Record<string, unknown> | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const { items, next } = await queryDuePage(shard, now, 100, start);
        for (const item of items) {
          try {
            await runOne(item, handlers, now, summary);
          } catch (err) {
            // The item keeps its lease and is taken over when it expires.
            logger.error('due work bookkeeping failed', {
              kind: item.kind,
              ref: item.ref,
              error: err as Error,
            });
          }
        }
        if (!next) return;
        start = next;
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
  if (item.leased_until !== undefined && item.leased_until > now) return;
  const token = await leaseDue(item, now, LEASE_SECONDS);
  if (!token) return;
  let result: DueResult;
  try {
    result = await handler(item, now);
  } catch (err) {
    summary.failed++;
    const attempts = (item.attempts ?? 0) + 1;
    const malformed = err instanceof MalformedDueWork;
    logger.error(malformed ? 'due work malformed; kept for an operator' : 'due work failed', {
      kind: item.kind,
      ref: item.ref,
      attempts,
      error: err as Error,
    });
    if (attempts < MAX_ATTEMPTS && !malformed) await retryDue(item, token, attempts, now + RETRY_SECONDS);
    else {
      await buryDue({ ...item, attempts }, token, (err as Error).message ?? String(err), now);
      count('DueWorkBuried');
    }
    return;
  }
  summary.ran++;
  if (result && result.reschedule !== item.due_at) {
    await putDue({
      ...item,
      due_at: result.reschedule,
      payload: result.payload ?? item.payload,
      attempts: 0,
    });
  } else if (result) {
    // Same time again: keep the item, free it for the next run.
    await retryDue(item, token, 0, now);
    return;
  }
  await completeDue(item, token);
}
