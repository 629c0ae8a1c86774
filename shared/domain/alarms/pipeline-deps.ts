import { nowMs, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import type { AlarmMessage, NotificationJob, WebhookBundle } from '../../contracts/messages.ts';
import { publish } from '../../messaging/sqs.ts';
import { getAlarmGroups } from '../directory/repository.ts';
import type { Task } from '../tasks/model.ts';
import { deliverNow } from '../webhooks/deliver-now.ts';
import { defaultDeliveryDeps } from '../webhooks/delivery-deps.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';
import { type EventToPublish, publishWebhookEvents } from '../events/publish.ts';
import { createWorkflow, finishWorkflowsOfMetric } from '../workflows/service.ts';
import { handbackDelaySeconds } from './contention.ts';
import type { HistoryRecord } from './history.ts';
import { nextHistoryId } from './ids.ts';
import { type AlarmLogEntry, putBatchLogs } from './log.ts';
import type { AlarmRecord } from './model.ts';
import * as repo from './repository.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import { count, measure } from '../../metrics.ts';

/**
 * The I/O of the alarm pipeline (pipeline.ts, process.ts, effects.ts, delayed.ts) in one object, so
 * a test can run the pipeline against its own.
 */
export const defaultDeps = {
  now: nowSeconds,
  /** The service clock, Unix ms (the time a batch's log entries are written at). */
  nowMs,
  /** Counts a service metric (shared/metrics.ts): what the pipeline accepted and decided. */
  count,
  /** Records a measurement of a service metric (shared/metrics.ts): how long accepted alarms waited. */
  measure,
  getTask: (id: number): Promise<Task | undefined> => getTaskCached(id),
  repo,
  nextHistoryId,
  /** Stores an alarm's record unless it exists (a batch stores its records together: collectEffects). */
  recordAlarm: async (record: AlarmRecord): Promise<'created' | 'exists'> =>
    (await repo.putAlarmRecords([record]))[0],
  getAlarmGroups,
  publishJobs: (jobs: NotificationJob[]) =>
    publish(
      'notify',
      jobs.map((body) => ({ body })),
    ),
  publishEvents: (taskId: number, events: EventToPublish[]) => publishWebhookEvents(taskId, events),
  /**
   * The batch's effects, at once: its webhook events' first attempts made here (only what fails, or
   * waits, takes the webhook queue: deliverNow), its notification jobs queued (in parallel batches of
   * ten). The settling first attempts are added to `delivered` as they are recorded, for the batch's
   * log write, even when this throws; it throws only once nothing is in flight any more.
   */
  sendEffects: async (
    messages: { webhook: WebhookBundle[]; notify: NotificationJob[] },
    delivered: WebhookAttempt[],
  ): Promise<void> => {
    const results = await Promise.allSettled([
      deliverNow(messages.webhook, {
        ...defaultDeliveryDeps,
        logDeliveries: async (attempts) => void delivered.push(...attempts),
      }),
      publish(
        'notify',
        messages.notify.map((body) => ({ body })),
      ),
    ]);
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  },
  createWorkflow: (input: {
    task: Task;
    history: HistoryRecord;
  }): Promise<{ id: number; created: boolean }> => createWorkflow(input),
  finishWorkflowsOfMetric: (input: { task: Task; metric: string }): Promise<number[]> =>
    finishWorkflowsOfMetric(input),
  /**
   * Adds processed alarms to their tasks' alarm log, and a batch's settling webhook first attempts to
   * their delivery log, at `atMs`: one BatchWriteItem (a batch writes its entries together:
   * collectEffects); written again with the same `atMs`, it overwrites the same items.
   */
  logAlarms: (entries: AlarmLogEntry[], deliveries: WebhookAttempt[] = [], atMs = nowMs()): Promise<void> =>
    putBatchLogs(entries, deliveries, atMs),
  sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
  /** Elapsed time, ms (monotonic; the invocation's time budget, not the service clock). */
  clockMs: () => performance.now(),
  /** How long a metric commit lost to other consumers is retried before its alarms are handed back. */
  contentionMs: () => config().alarmContentionMs,
  /**
   * Puts alarms of a contended metric back on the alarm queue as new messages (contention.ts), each
   * after a short jittered delay; throws unless all were queued.
   */
  handBack: (alarms: AlarmMessage[]) =>
    publish(
      'alarm',
      alarms.map((body) => ({ body, delaySeconds: handbackDelaySeconds() })),
    ),
};
export type PipelineDeps = typeof defaultDeps;
