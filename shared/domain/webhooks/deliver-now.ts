import { performance } from 'node:perf_hooks';
import type {
  NotificationJob,
  WebhookBundle,
  WebhookEvent,
  WebhookMessage,
} from '../../contracts/messages.ts';
import { publish } from '../../messaging/sqs.ts';
import type { WebhookAttempt } from './repository.ts';
import { type EventToPublish, packBundles, webhookBundles } from '../events/publish.ts';
import { attemptOne, type Item, itemsOfBundle, record, unqueued } from './attempt.ts';
import { failedLately } from './circuit.ts';
import { deliverItems } from './delivery.ts';
import { defaultDeliveryDeps, type DeliveryDeps } from './delivery-deps.ts';

/** How long a producer's first attempts may hold it up: events not started by then are queued. */
const FIRST_ATTEMPT_BUDGET_MS = 1_000;

/**
 * Whether a task's receiver failed an attempt of this container lately (its circuit, circuit.ts):
 * its events then take the queue, so a receiver that is down costs its producers the timeouts of one
 * batch per container and OPEN_MS, not of every batch.
 */
const coolingOff = failedLately;

/** A producer's events, regrouped per task (in their order) into bundles of a queue message's size. */
function bundlesOf(items: Item[]): WebhookBundle[] {
  const byTask = new Map<number, { created_at: number; events: WebhookEvent[] }>();
  for (const { msg } of items) {
    const { kind: _k, task_id, created_at, ...event } = msg;
    const group = byTask.get(task_id) ?? { created_at, events: [] };
    group.events.push(event);
    byTask.set(task_id, group);
  }
  return [...byTask].flatMap(([taskId, g]) => packBundles(taskId, g.created_at, g.events));
}

/**
 * The first attempt of a producer's events, made by the producer itself (the alarm consumer, for its
 * batch): the queue carries only what failed, each event a message of its own delayed by the first
 * backoff, so the common case costs no queue hop. Exactly the attempt the webhook consumer makes
 * (task read, URL guard, signature), recorded through `deps` (the settling ones by `logDeliveries`,
 * which a producer may collect to write with its own log). Queued as they are, for the webhook
 * consumer: replays (they may have gone out before: the consumer looks that up), the events of a task
 * whose webhook failed here lately (its circuit is open), and those not started within
 * FIRST_ATTEMPT_BUDGET_MS.
 * Resolves once every event was delivered, settled or durably queued; otherwise throws once nothing
 * is in flight any more, and the producer runs again (its events then go out as replays).
 */
export async function deliverNow(
  bundles: WebhookBundle[],
  deps: DeliveryDeps = defaultDeliveryDeps,
): Promise<void> {
  const now: Item[] = [];
  const queued: WebhookBundle[] = [];
  const t = Date.now();
  for (const bundle of bundles) {
    const cooling = coolingOff(bundle.task_id, t);
    const later = bundle.events.filter((e) => cooling || e.replay_since_ms !== undefined);
    if (later.length > 0) queued.push({ ...bundle, events: later });
    const fresh = bundle.events.filter((e) => !later.includes(e));
    now.push(...itemsOfBundle(bundle, fresh, (e) => unqueued(e.event_id)));
  }
  const [delivery, queuing] = await Promise.allSettled([
    deliverItems(now, deps, performance.now() + FIRST_ATTEMPT_BUDGET_MS),
    queued.length > 0 ? deps.queueBundles(queued) : undefined,
  ]);
  if (delivery.status === 'rejected') throw delivery.reason;
  const { back, late } = delivery.value;
  if (late.length > 0) await deps.queueBundles(bundlesOf(late));
  if (queuing.status === 'rejected') throw queuing.reason;
  if (back.length > 0) throw new Error(`could not queue the retries of ${back.length} webhook events`);
}

/**
 * Sends one event now, outside the queue (an operator's test-send, `POST /alarmtask/webhook/test`):
 * the same attempt a queued event makes (the task read, the URL guard, the Standard Webhooks
 * signature, the outbound client) recorded like any first attempt. It is not retried: the attempt is
 * the answer.
 */
export async function sendEventNow(
  msg: WebhookMessage,
  deps: DeliveryDeps = defaultDeliveryDeps,
): Promise<WebhookAttempt> {
  const item: Item = { record: unqueued(msg.event_id), msg, bundled: false };
  const attempt = await attemptOne(item, new Map(), deps);
  await record([{ item, attempt }], deps);
  return attempt;
}

/** Where producers' webhook events and notification jobs go. */
export interface Effects {
  publishEvents(taskId: number, events: EventToPublish[]): Promise<void>;
  publishJobs(jobs: NotificationJob[]): Promise<void>;
}

/**
 * The effects of a batch of producers (the due queue consumer's items), collected and sent together
 * once every producer ran (`flush`): the events of a task in one bundle, their first attempts made at
 * once (deliverNow: only what fails takes the webhook queue), the jobs in shared SendMessageBatch
 * calls. `flush` resolves once every event was delivered, settled or durably queued and every job
 * queued; else it throws, and the producers run again (their events and jobs have the same ids).
 */
export function batchOfEffects(deps: DeliveryDeps = defaultDeliveryDeps): {
  effects: Effects;
  flush(): Promise<void>;
} {
  const events = new Map<number, EventToPublish[]>();
  const jobs: NotificationJob[] = [];
  return {
    effects: {
      publishEvents: async (taskId, list) => {
        events.set(taskId, [...(events.get(taskId) ?? []), ...list]);
      },
      publishJobs: async (list) => {
        jobs.push(...list);
      },
    },
    async flush() {
      const results = await Promise.allSettled([
        events.size > 0
          ? deliverNow(
              [...events].flatMap(([t, list]) => webhookBundles(t, list)),
              deps,
            )
          : undefined,
        jobs.length > 0
          ? publish(
              'notify',
              jobs.map((body) => ({ body })),
            )
          : undefined,
      ]);
      for (const r of results) if (r.status === 'rejected') throw r.reason;
    },
  };
}
