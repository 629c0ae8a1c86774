import { DUE_SHARDS } from '../../db/keys.ts';
import { isObject, parseJson } from '../../json.ts';
import { logger } from '../../log.ts';
import { count } from '../../metrics.ts';
import type { DueMessage } from '../../contracts/messages.ts';
import type { Effects } from '../webhooks/deliver-now.ts';
import {
  buryDue,
  completeDueItems,
  type DueItem,
  type LeasedDue,
  leaseDueItems,
  nextDueAt,
  putDue,
  queryDuePage,
  retryDue,
} from './repository.ts';

/**
 * Due work at scale, in two parts (KEY-DESIGN "Due work"). The scheduled function dispatches: it
 * leases what is due by now, a page at a time (25 conditional writes per call), and hands the leased
 * items to the due queue, many to a message; polling, it stays until its deadline as long as work
 * falls due before it. The due queue's consumer runs them (runDueItems), as many containers at once
 * as the queue needs: the work scales with the items, not with one function's minute. An item is
 * removed only once its work is done (its lease token checked), so nothing is lost: a dispatcher that
 * dies between the lease and the queue, or a message the queue gave up on, leaves leased items that
 * the next run takes over when their lease expires; handlers are idempotent per item.
 */

/**
 * What a due handler may ask for: nothing (done), or to run again at `reschedule` (a cycle reminder
 * re-arming, a reminder held while its task is paused).
 */
export type DueResult = undefined | { reschedule: number; payload?: Record<string, unknown> };
/**
 * Runs one item of a kind. `effects`, when given, takes the webhook events and notification jobs the
 * work raises, for its batch to send together; without it they are published at once.
 */
export type DueHandler = (item: DueItem, now: number, effects?: Effects) => Promise<DueResult>;

/** A batch's effects, collected while its items run and sent before they are removed. */
export interface BatchEffects {
  effects: Effects;
  flush(): Promise<void>;
}

/**
 * What a handler throws for an item that can never run (its payload is not what its kind reads): the
 * item is kept under DUEDEAD at once, with the reason, instead of failing MAX_ATTEMPTS times.
 */
export class MalformedDueWork extends Error {
  override name = 'MalformedDueWork';
}

/** Failed runs before the item is moved to `DUEDEAD#<kind>` for an operator. */
export const MAX_ATTEMPTS = 10;
/**
 * How long a lease holds an item: longer than its message can be retried by the due queue (receives
 * x visibility timeout), so only an item whose message was lost is taken over.
 */
export const LEASE_SECONDS = 900;
const RETRY_SECONDS = 60;
/** Items read per page of a shard (a page is leased and sent before the deadline is looked at again). */
const PAGE_ITEMS = 100;
export const ITEMS_PER_MESSAGE = 25;
/** Items of one consumer batch run at once (a wave). */
const RUN_CONCURRENCY = 25;
/** A polling dispatcher stops this long before its invocation ends, and never sleeps less. */
const DEADLINE_MARGIN_MS = 10_000;
const MIN_SLEEP_MS = 200;

export interface RunSummary {
  ran: number;
  failed: number;
}

export interface DispatchOptions {
  /** The service clock, Unix seconds. */
  now: () => number;
  /** The kinds with a handler: items of other kinds are left in place (a later version runs them). */
  kinds: Set<string>;
  /** Hands leased items over (the due queue); resolves once they are durably queued. */
  send: (items: LeasedDue[]) => Promise<void>;
  /** What is left of the invocation (ms); without it, one pass over what is due by now. */
  remainingMs?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface DispatchSummary {
  dispatched: number;
  /** Passes over the shards (one, or more while polling). */
  passes: number;
}

/**
 * The scheduled function's part: leases the work due by now on every shard and sends it on; with
 * `remainingMs`, then sleeps until the next item falls due and does it again, as long as that is
 * before its deadline (what falls due later is the next run's). Each pass reads a shard only from
 * where the previous one stopped; items held by another runner (or waiting for a retry) are passed
 * over, and a later run takes them when their lease passes.
 */
export async function dispatchDue(opts: DispatchOptions): Promise<DispatchSummary> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const left = () => (opts.remainingMs ? opts.remainingMs() - DEADLINE_MARGIN_MS : Number.POSITIVE_INFINITY);
  const positions = new Map<number, Record<string, unknown> | undefined>();
  const summary: DispatchSummary = { dispatched: 0, passes: 0 };
  for (;;) {
    const now = opts.now();
    summary.passes++;
    const sent = await Promise.all(
      Array.from({ length: DUE_SHARDS }, (_, shard) => dispatchShard(shard, now, positions, opts, left)),
    );
    summary.dispatched += sent.reduce((a, b) => a + b, 0);
    if (!opts.remainingMs || left() <= MIN_SLEEP_MS) return summary;
    const next = (await Promise.all(Array.from({ length: DUE_SHARDS }, (_, s) => nextDueAt(s, now)))).filter(
      (t): t is number => t !== undefined,
    );
    const wait = next.length ? (Math.min(...next) - now) * 1000 : Number.POSITIVE_INFINITY;
    if (wait >= left()) return summary;
    await sleep(Math.max(MIN_SLEEP_MS, wait));
  }
}

async function dispatchShard(
  shard: number,
  now: number,
  positions: Map<number, Record<string, unknown> | undefined>,
  opts: DispatchOptions,
  left: () => number,
): Promise<number> {
  let dispatched = 0;
  let more = true;
  while (more && left() > 0) {
    const page = await queryDuePage(shard, now, PAGE_ITEMS, positions.get(shard));
    if (page.last) positions.set(shard, page.next ?? page.last);
    const free = page.items.filter(
      (d) => opts.kinds.has(d.kind) && (d.leased_until === undefined || d.leased_until <= now),
    );
    const leased = free.length ? await leaseDueItems(free, now, LEASE_SECONDS) : [];
    if (leased.length) await opts.send(leased);
    dispatched += leased.length;
    more = page.next !== undefined;
  }
  return dispatched;
}

/**
 * The due queue consumer's part: runs leased items (RUN_CONCURRENCY at once) with their kind's
 * handler, sends the effects they raised (`batch`, when given), then removes the done ones together
 * (their lease token checked): nothing is removed before its effects went out. A failed item keeps its
 * place and is retried a minute later (its lease doubles as the delay), at most MAX_ATTEMPTS times;
 * then it is kept under DUEDEAD with its error (a malformed one at once). A handler's `reschedule` puts a new item at the new
 * time first (cycle reminders, reminders held while a task is paused).
 */
export async function runDueItems(
  items: LeasedDue[],
  handlers: Record<string, DueHandler>,
  now: number,
  batch?: BatchEffects,
): Promise<RunSummary> {
  const summary: RunSummary = { ran: 0, failed: 0 };
  const done: LeasedDue[] = [];
  // In waves: the items of a wave start together, so their reads are one request (batchPerTurn).
  for (let i = 0; i < items.length; i += RUN_CONCURRENCY) {
    await Promise.all(
      items.slice(i, i + RUN_CONCURRENCY).map(async (item) => {
        try {
          if (await runOne(item, handlers, now, summary, batch?.effects)) done.push(item);
        } catch (err) {
          // The item keeps its lease and is taken over when it expires.
          logger.error('due work bookkeeping failed', {
            kind: item.kind,
            ref: item.ref,
            error: err as Error,
          });
        }
      }),
    );
  }
  await batch?.flush();
  await completeDueItems(done);
  return summary;
}

/** Runs one item; true when it is done and can be removed. */
async function runOne(
  item: LeasedDue,
  handlers: Record<string, DueHandler>,
  now: number,
  summary: RunSummary,
  effects?: Effects,
): Promise<boolean> {
  const handler = handlers[item.kind];
  if (!handler) {
    // Another version dispatched it: give it back for a run that has its handler.
    logger.warn('no handler for due work; left for later', { kind: item.kind, ref: item.ref });
    await retryDue(item, item.token, item.attempts ?? 0, now);
    return false;
  }
  let result: DueResult;
  try {
    result = await handler(item, now, effects);
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
    if (attempts < MAX_ATTEMPTS && !malformed)
      await retryDue(item, item.token, attempts, now + RETRY_SECONDS);
    else {
      await buryDue({ ...item, attempts }, item.token, (err as Error).message ?? String(err), now);
      count('DueWorkBuried');
    }
    return false;
  }
  summary.ran++;
  if (result && result.reschedule === item.due_at) {
    // Same time again: keep the item, free it for the next run.
    await retryDue(item, item.token, 0, now);
    return false;
  }
  if (result) {
    const { token: _token, leased_until: _leased, ...rest } = item;
    await putDue({
      ...rest,
      due_at: result.reschedule,
      payload: result.payload ?? item.payload,
      attempts: 0,
    });
  }
  return true;
}

/** The leased items of a due queue message, or undefined when it is not one. */
export function parseDueMessage(body: string): LeasedDue[] | undefined {
  let m: unknown;
  try {
    m = parseJson(body);
  } catch {
    return undefined;
  }
  if (!isObject(m) || m.kind !== 'due' || !Array.isArray(m.items)) return undefined;
  const ok = m.items.every(
    (d) =>
      isObject(d) &&
      typeof d.kind === 'string' &&
      typeof d.ref === 'string' &&
      Number.isSafeInteger(d.due_at) &&
      isObject(d.payload) &&
      typeof d.token === 'string' &&
      (d.attempts === undefined || Number.isSafeInteger(d.attempts)),
  );
  return ok ? (m.items as LeasedDue[]) : undefined;
}

/** The due queue messages of leased items, ITEMS_PER_MESSAGE to a message. */
export function dueMessages(items: LeasedDue[]): DueMessage[] {
  const messages: DueMessage[] = [];
  for (let i = 0; i < items.length; i += ITEMS_PER_MESSAGE) {
    messages.push({
      kind: 'due',
      items: items.slice(i, i + ITEMS_PER_MESSAGE).map((d) => ({
        kind: d.kind,
        ref: d.ref,
        due_at: d.due_at,
        payload: d.payload,
        ...(d.attempts !== undefined ? { attempts: d.attempts } : {}),
        token: d.token,
      })),
    });
  }
  return messages;
}

/**
 * A batch of the due queue: every item of its messages run together (runDueItems). Returns the ids
 * of the messages to receive again: a malformed one (for the dead-letter queue), or all of them when
 * their effects could not be sent or the done items could not be removed (they run again: handlers
 * are idempotent, and their events and jobs have the same ids).
 */
export async function runDueBatch(
  records: { messageId: string; body: string }[],
  handlers: Record<string, DueHandler>,
  now: number,
  batch?: BatchEffects,
): Promise<string[]> {
  const failed: string[] = [];
  const items: LeasedDue[] = [];
  for (const r of records) {
    const parsed = parseDueMessage(r.body);
    if (parsed) items.push(...parsed);
    else {
      logger.error('malformed due work message; left for the dead-letter queue', { messageId: r.messageId });
      failed.push(r.messageId);
    }
  }
  try {
    const summary = await runDueItems(items, handlers, now, batch);
    if (summary.ran || summary.failed) logger.info('due work', { ...summary });
  } catch (err) {
    logger.error('due work could not be completed; the batch runs again', { error: err as Error });
    return records.map((r) => r.messageId);
  }
  return failed;
}
