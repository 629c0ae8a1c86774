import { beforeAll, beforeEach } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import type { WebhookBundle, WebhookMessage } from '../../contracts/messages.ts';
import type { Task } from '../tasks/model.ts';
import { resetCircuits } from './circuit.ts';
import type { DeliveryRecord } from './attempt.ts';
import type { DeliveryDeps } from './delivery-deps.ts';
import type { WebhookAttempt } from './repository.ts';

/** Test support of the webhook delivery unit tests: the configuration, tasks, messages and fakes. */

/** Registers the configuration the delivery tests run with (backoff, service version, the URL guard on). */
export function useDeliveryConfig(): void {
  beforeAll(() => {
    process.env.TABLE_NAME = 'unit';
    process.env.SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
    process.env.WEBHOOK_BACKOFF_SECONDS = '5,30,120,600,1800,3600';
    process.env.SERVICE_VERSION = '9.8.7';
    process.env.BLOCK_PRIVATE_WEBHOOKS = '1';
    resetConfig();
  });
  // Each test starts with every task's circuit closed.
  beforeEach(() => resetCircuits());
}

export const SECRET = 'f'.repeat(40);
export const task = (webhook?: string) =>
  ({
    id: 12,
    name: 'n',
    secret: SECRET,
    token: 't',
    receiver: { channels: webhook ? { webhook } : {} },
  }) as Task;

export function message(
  n: number,
  taskId = 12,
  event: WebhookMessage['body']['event'] = 'ALARM',
): WebhookMessage {
  return {
    kind: 'webhook',
    event_id: `evt-${taskId}-${n}`,
    task_id: taskId,
    created_at: 1700000000,
    body: { event, type: 'compress_disable', data: { n }, extra: {} },
  };
}

export function bundle(ns: number[], taskId = 12, extra: Partial<WebhookMessage> = {}): WebhookBundle {
  return {
    kind: 'webhooks',
    task_id: taskId,
    created_at: 1700000000,
    events: ns.map((n) => {
      const { kind: _k, task_id: _t, created_at: _c, ...e } = { ...message(n, taskId), ...extra };
      return e;
    }),
  };
}

export function rec(
  m: WebhookMessage | WebhookBundle | string,
  receiveCount = 1,
  id?: string,
): DeliveryRecord {
  const body = typeof m === 'string' ? m : JSON.stringify(m);
  return {
    messageId: id ?? (typeof m === 'string' ? 'bad' : m.kind === 'webhook' ? m.event_id : 'bundle'),
    receiptHandle: `rh-${id}`,
    body,
    receiveCount,
  };
}

/** A recorded attempt of task 12's event that the receiver answered with a 500. */
export const failedAttempt = (eventId: string, attempt: number, atMs: number): WebhookAttempt => ({
  event_id: eventId,
  task_id: 12,
  attempt,
  event: 'ALARM',
  type: 'compress_disable',
  outcome: 'failed',
  status: 500,
  error: 'HTTP 500',
  duration_ms: 2,
  at_ms: atMs,
  at: Math.floor(atMs / 1000),
});

export interface Posted {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export function fakes(
  opts: { task?: Task; status?: number | ((n: number) => number); refuse?: boolean; postMs?: number } = {},
) {
  const posted: Posted[] = [];
  const own: WebhookAttempt[] = [];
  const logs: WebhookAttempt[][] = [];
  const dead: WebhookMessage[] = [];
  const claims = new Set<string>();
  const marks = new Set<string>();
  const requeued: { body: WebhookMessage; delaySeconds: number }[] = [];
  const bundled: WebhookBundle[] = [];
  const searches: [string, boolean][] = [];
  let requeueFails = 0;
  const taskReads: [number, number | undefined][] = [];
  const inFlight = { now: 0, max: 0 };
  const deps: DeliveryDeps = {
    getTask: async (id, notOlderThan) => {
      taskReads.push([id, notOlderThan]);
      return 'task' in opts ? opts.task : task('https://hooks.example.com/in?token=abc');
    },
    checkUrl: async (url) =>
      opts.refuse ? { ok: false, reason: 'not public' } : { ok: true, url: new URL(url) },
    post: async (url, headers, body) => {
      posted.push({ url: url.href, headers, body });
      inFlight.now++;
      inFlight.max = Math.max(inFlight.max, inFlight.now);
      if (opts.postMs) await new Promise((r) => setTimeout(r, opts.postMs));
      inFlight.now--;
      const status = typeof opts.status === 'function' ? opts.status(posted.length) : (opts.status ?? 200);
      return { status };
    },
    recordAttempts: async (a) => {
      own.push(...a);
    },
    logDeliveries: async (a) => {
      logs.push(a);
    },
    requeue: async (messages) => {
      if (requeueFails > 0) {
        requeueFails--;
        throw new Error('queue down');
      }
      requeued.push(...messages);
    },
    queueBundles: async (bundles) => {
      if (requeueFails > 0) {
        requeueFails--;
        throw new Error('queue down');
      }
      bundled.push(...bundles);
    },
    pastAttempts: async (eventId, _taskId, sinceMs, searchLog) => {
      searches.push([eventId, searchLog]);
      const past = [...own, ...(searchLog ? logs.flat() : [])].filter(
        (a) => a.event_id === eventId && a.at_ms >= sinceMs,
      );
      return {
        delivered: past.some((a) => a.outcome === 'delivered'),
        last: Math.max(0, ...past.map((a) => a.attempt)),
      };
    },
    claimRetry: async (eventId, attempt) => {
      const key = `${eventId}#${attempt}`;
      if (claims.has(key)) return false;
      claims.add(key);
      return true;
    },
    deadLetter: async (messages) => {
      dead.push(...messages);
    },
    wasDeadLettered: async (eventId, since) =>
      [...marks].some((m) => m.startsWith(`${eventId}#`) && Number(m.split('#').at(-1)) > since),
    markDeadLettered: async (events) => {
      for (const e of events) marks.add(`${e.event_id}#${e.attempts_before ?? 0}`);
    },
  };
  const failRequeue = (n: number) => {
    requeueFails = n;
  };
  return { deps, posted, own, logs, dead, requeued, bundled, searches, failRequeue, taskReads, inFlight };
}
