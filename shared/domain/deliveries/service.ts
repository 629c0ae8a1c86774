import { randomUUID } from 'node:crypto';
import { nowMs, nowSeconds } from '../../clock.ts';
import { isObject } from '../../json.ts';
import { NOTIFY_TASK_SHARDS, webhookLogDayOf } from '../../db/keys.ts';
import type { WebhookMessage } from '../../contracts/messages.ts';
import { ConflictError, ValidationError } from '../errors.ts';
import {
  type AttemptRecord,
  type NotifyAttemptsPosition,
  pageAttemptsOfTaskShard,
} from '../notifications/repository.ts';
import { taskForUser } from '../tasks/access.ts';
import { webhookUrlOf } from '../webhooks/attempt.ts';
import { sendEventNow } from '../webhooks/deliver-now.ts';
import { defaultDeliveryDeps } from '../webhooks/delivery-deps.ts';
import { pingEvent } from '../events/payloads.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';
import {
  type DeliveryLogPosition,
  pageDeliveryLogOfTask,
  pageOwnAttemptsOfTask,
} from '../webhooks/repository-listing.ts';
import { decodeCursor, encodeCursor, isEntryCount, isTimedSortKey, msOfTimedSortKey } from '../cursor.ts';
import { DEFAULT_LIMIT, DELIVERY_KINDS, type DeliveryKind } from './schemas.ts';
import type { DeliveryList, DeliveryView, WebhookTested } from './responses.ts';

/**
 * A task's deliveries (API guide §13.4): its recent webhook and notification attempts, merged newest
 * first and paged with a cursor, and the webhook test-send.
 *
 * The attempts live in six sorted sources: the task's webhook attempts of their own (gsi1
 * `WHTASK#<task>`, by attempt time), its webhook delivery log (`WHLOG#<task>#<day>`, by the time of
 * each log item's first attempt) and the four gsi1 shards of its notification jobs
 * (`TASKNOTIFY#<task>#<n>`, by each job's last run; a job's attempts follow it newest first). A page
 * reads at most `limit` attempts from each source, merges them by each source's own order key and
 * keeps the `limit` first; the cursor holds, per source, the position just after the last attempt
 * it took (or that the source is done), so no attempt is skipped or repeated between pages. The
 * order is newest first by those keys: exact for attempts of their own, within a consumer batch's
 * few seconds for log entries, and per job (by its last run) for notifications. A job that runs
 * again while someone pages moves to the front and is not shown again on the later pages.
 */

export type SourceId = 'w' | 'l' | 'n0' | 'n1' | 'n2' | 'n3';
type Position = string | DeliveryLogPosition | NotifyAttemptsPosition;

const NOTIFY_SOURCES = Array.from({ length: NOTIFY_TASK_SHARDS }, (_, n) => `n${n}` as SourceId);

export function sourcesOf(kind: DeliveryKind): SourceId[] {
  if (kind === 'webhook') return ['w', 'l'];
  if (kind === 'notify') return NOTIFY_SOURCES;
  return ['w', 'l', ...NOTIFY_SOURCES];
}

export function webhookView(a: WebhookAttempt): DeliveryView {
  return {
    kind: 'webhook',
    id: a.event_id,
    event: a.event,
    type: a.type,
    channel: 'webhook',
    ...(a.target ? { target: a.target } : {}),
    attempt: a.attempt,
    outcome: a.outcome,
    ...(a.status !== undefined ? { status: a.status } : {}),
    ...(a.error ? { error: a.error } : {}),
    duration_ms: a.duration_ms,
    at: a.at,
    at_ms: a.at_ms,
  };
}

export function notifyView(a: AttemptRecord): DeliveryView {
  return {
    kind: 'notify',
    id: a.job_id,
    scene: a.scene,
    channel: a.channel,
    target: a.target,
    attempt: a.attempt,
    outcome: a.outcome,
    code: a.code,
    ...(a.detail ? { error: a.detail } : {}),
    duration_ms: a.duration_ms,
    at: a.at,
    at_ms: a.at_ms,
  };
}

/** A source's page: rows in the source's order (order keys never increasing) and whether it ended. */
export interface SourcePage<R> {
  source: SourceId;
  rows: { orderMs: number; after: Position; row: R }[];
  done: boolean;
}

export interface Merged<R> {
  rows: R[];
  /** Per source: the position after its last row taken, `done`, or unchanged (absent). */
  positions: Partial<Record<SourceId, Position | 'done'>>;
}

/**
 * Merges source pages newest first (ties: the pages' order) and takes `limit` rows. A source is done
 * when it said so and every row it returned was taken.
 */
export function mergePages<R>(pages: SourcePage<R>[], limit: number): Merged<R> {
  const all = pages.flatMap((p, s) => p.rows.map((r, i) => ({ ...r, s, i })));
  all.sort((a, b) => b.orderMs - a.orderMs || a.s - b.s || a.i - b.i);
  const taken = all.slice(0, limit);
  const positions: Merged<R>['positions'] = {};
  pages.forEach((p, s) => {
    const mine = taken.filter((t) => t.s === s);
    if (p.done && mine.length === p.rows.length) positions[p.source] = 'done';
    else if (mine.length > 0) positions[p.source] = mine[mine.length - 1].after;
  });
  return { rows: taken.map((t) => t.row), positions };
}

/** The cursor of a deliveries listing: task, kind, each started source's position, the sources done. */
interface DeliveriesCursor {
  v: 1;
  t: number;
  k: DeliveryKind;
  p: Partial<Record<SourceId, Position>>;
  d: SourceId[];
}

/**
 * A position is a sort key as the source writes it, and the entries of its item already read; a
 * delivery log position's day is the day its sort key's time falls in (the item's partition).
 */
function validPosition(source: SourceId, v: unknown): boolean {
  if (source === 'w') return isTimedSortKey(v);
  if (!isObject(v) || !isTimedSortKey(v.s) || !isEntryCount(v.r)) return false;
  return source !== 'l' || v.d === webhookLogDayOf(msOfTimedSortKey(v.s));
}

function isDeliveriesCursor(v: unknown): v is DeliveriesCursor {
  if (!isObject(v) || v.v !== 1 || !Number.isSafeInteger(v.t)) return false;
  if (!DELIVERY_KINDS.includes(v.k as DeliveryKind)) return false;
  const sources = sourcesOf(v.k as DeliveryKind);
  if (!Array.isArray(v.d) || !v.d.every((s) => sources.includes(s as SourceId))) return false;
  if (new Set(v.d).size !== v.d.length) return false;
  if (!isObject(v.p)) return false;
  return Object.entries(v.p).every(
    ([s, pos]) => sources.includes(s as SourceId) && validPosition(s as SourceId, pos),
  );
}

/** Positions as the repositories take them (the cursor stores them compactly). */
const logPosition = (p: { d: number; s: string; r: number }): DeliveryLogPosition => ({
  day: p.d,
  sk: p.s,
  read: p.r,
});
const notifyPosition = (p: { s: string; r: number }): NotifyAttemptsPosition => ({ sk: p.s, read: p.r });

function compact(source: SourceId, pos: Position): unknown {
  if (source === 'w') return pos;
  if (source === 'l') {
    const p = pos as DeliveryLogPosition;
    return { d: p.day, s: p.sk, r: p.read };
  }
  const p = pos as NotifyAttemptsPosition;
  return { s: p.sk, r: p.read };
}

export interface DeliveriesDeps {
  taskForUser: typeof taskForUser;
  pageOwn: typeof pageOwnAttemptsOfTask;
  pageLog: typeof pageDeliveryLogOfTask;
  pageNotify: typeof pageAttemptsOfTaskShard;
  nowMs: () => number;
}

export const deliveriesDeps: DeliveriesDeps = {
  taskForUser,
  pageOwn: pageOwnAttemptsOfTask,
  pageLog: pageDeliveryLogOfTask,
  pageNotify: pageAttemptsOfTaskShard,
  nowMs,
};

export interface ListDeliveriesInput {
  uid: number;
  task_id: number;
  kind?: DeliveryKind;
  limit?: number;
  cursor?: string;
}

/** GET /alarmtask/deliveries: a task's recent attempts, newest first, paged (read permission). */
export async function listDeliveries(
  input: ListDeliveriesInput,
  deps: DeliveriesDeps = deliveriesDeps,
): Promise<DeliveryList> {
  const kind = input.kind ?? 'all';
  const limit = input.limit ?? DEFAULT_LIMIT;
  const cursor = input.cursor ? decodeCursor(input.cursor, isDeliveriesCursor) : undefined;
  if (cursor && (cursor.t !== input.task_id || cursor.k !== kind)) {
    throw ValidationError.of('cursor', 'belongs to another listing (task or kind)');
  }
  await deps.taskForUser(input.uid, input.task_id, 'read');
  const done = new Set(cursor?.d ?? []);
  const now = deps.nowMs();
  const active = sourcesOf(kind).filter((s) => !done.has(s));
  const pages = await Promise.all(
    active.map(async (source): Promise<SourcePage<DeliveryView>> => {
      const at = cursor?.p[source] as never;
      if (source === 'w') {
        const page = await deps.pageOwn(input.task_id, limit, at);
        return {
          source,
          done: page.done,
          rows: page.rows.map((r) => ({ ...r, row: webhookView(r.attempt) })),
        };
      }
      if (source === 'l') {
        const page = await deps.pageLog(input.task_id, limit, now, at ? logPosition(at) : undefined);
        return {
          source,
          done: page.done,
          rows: page.rows.map((r) => ({ ...r, row: webhookView(r.attempt) })),
        };
      }
      const shard = Number(source.slice(1));
      const page = await deps.pageNotify(input.task_id, shard, limit, at ? notifyPosition(at) : undefined);
      return { source, done: page.done, rows: page.rows.map((r) => ({ ...r, row: notifyView(r.attempt) })) };
    }),
  );
  const merged = mergePages(pages, limit);
  const next: DeliveriesCursor = { v: 1, t: input.task_id, k: kind, p: {}, d: [...done] };
  for (const source of active) {
    const pos = merged.positions[source];
    if (pos === 'done') next.d.push(source);
    else if (pos !== undefined) next.p[source] = compact(source, pos) as Position;
    else if (cursor?.p[source] !== undefined) next.p[source] = cursor.p[source];
  }
  const finished = next.d.length === sourcesOf(kind).length;
  return {
    task_id: input.task_id,
    kind,
    deliveries: merged.rows,
    next_cursor: finished ? '' : encodeCursor(next),
  };
}

export interface TestWebhookInput {
  uid: number;
  task_id: number;
}

/**
 * POST /alarmtask/webhook/test: a PING to the task's webhook now, through the deliverer's own attempt
 * (URL guard, signature, outbound client), recorded like any attempt and returned (write permission:
 * it calls out on the task's behalf). 409 when the task has no webhook.
 */
export async function testWebhook(
  input: TestWebhookInput,
  deps: { taskForUser: typeof taskForUser; send: typeof sendEventNow; now: () => number } = {
    taskForUser,
    send: sendEventNow,
    now: nowSeconds,
  },
): Promise<WebhookTested> {
  const task = await deps.taskForUser(input.uid, input.task_id, 'write');
  if (!webhookUrlOf(task)) throw new ConflictError(`task [${task.id}] has no webhook`);
  const message: WebhookMessage = {
    kind: 'webhook',
    event_id: `${task.id}:test:${randomUUID()}`,
    task_id: task.id,
    created_at: deps.now(),
    body: pingEvent(),
  };
  // The task just read is the one to send for (not a second read of it).
  const attempt = await deps.send(message, { ...defaultDeliveryDeps, getTask: async () => task });
  const view = webhookView(attempt);
  const { kind: _k, id: _id, ...rest } = view as Extract<DeliveryView, { kind: 'webhook' }>;
  return { webhook_id: attempt.event_id, ...rest };
}
