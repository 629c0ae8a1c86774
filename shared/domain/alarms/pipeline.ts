import { parseJson } from '../../json.ts';
import { nowMs, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { logger } from '../../log.ts';
import { count } from '../../metrics.ts';
import type { AlarmMessage, NotificationJob, WebhookBundle } from '../../messaging/messages.ts';
import { publish } from '../../messaging/sqs.ts';
import { getAlarmGroups } from '../directory/repository.ts';
import type { DueItem } from '../due/repository.ts';
import type { DueResult } from '../due/runner.ts';
import { effectiveStatus, TASK_PAUSED, TASK_RUNNING, type Task } from '../tasks/model.ts';
import { sealReceiverRobots } from '../channels/robots.ts';
import { retentionDaysOf } from '../tasks/settings.ts';
import { defaultDeliveryDeps, deliverNow } from '../webhooks/delivery.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';
import { event, historyRef, msgRef, taskRef } from '../events/payloads.ts';
import { type EventToPublish, publishWebhookEvents, webhookBundles } from '../events/publish.ts';
import { createWorkflow, finishWorkflowsOfMetric } from '../workflows/service.ts';
import { strategyOf } from './compress.ts';
import {
  commitBackoffMs,
  commitDeadline,
  handBackContended,
  handbackDelaySeconds,
  MetricContended,
  VersionWatch,
} from './contention.ts';
import { explainAlarm, type Why } from './explain.ts';
import type { HistoryRecord } from './history.ts';
import { nextHistoryId } from './ids.ts';
import { type AlarmLogEntry, entryOfRecord, putBatchLogs } from './log.ts';
import {
  type AlarmRecord,
  advanceMetric,
  factsOf,
  notifyOf,
  type Plan,
  planAlarm,
  type StoredOutcome,
} from './model.ts';
import { type Notice, selectedReceivers, selectReceivers, sendNotice } from './notify.ts';
import { recoveryDelaySeconds } from './recovery.ts';
import * as repo from './repository.ts';
import { getTaskCached } from '../tasks/task-cache.ts';
import { firstBucket, maxInterval, minuteOf, upgradeStrategies } from './upgrade.ts';

/**
 * The alarm processing pipeline (behavior 7): recovery -> filter -> compress -> upgrade -> workflow
 * -> notify, for each AlarmMessage of the alarm queue.
 *
 * At-least-once, idempotent per alarm uuid: every decision is written once with the stored alarm in
 * its record `ALARM#<uuid>` (conditional put; for compressed alarms in the same transaction that
 * advances the metric's window and counters), and only then are the side effects run: webhook events
 * and notification jobs with ids derived from the uuid, the workflow (idempotent per uuid). A
 * redelivered alarm finds its record and re-runs the side effects only, so counters are never
 * counted twice and nothing is lost if the consumer dies between the write and the publishing.
 */

/** Due-work kinds of this module (its handler: due-work.ts). */
export const FLUSH_KIND = 'compress-flush';
export const RECOVERY_DELAY_KIND = 'recovery-delay';

export const defaultDeps = {
  now: nowSeconds,
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

export interface QueuedAlarm {
  /** SQS message id (reported back on failure). */
  id: string;
  body: string;
}

/** A well-formed AlarmMessage, or undefined. */
export function parseAlarmMessage(body: string): AlarmMessage | undefined {
  let v: unknown;
  try {
    v = parseJson(body);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== 'object') return undefined;
  const m = v as Record<string, unknown>;
  const isObject = (x: unknown) => !!x && typeof x === 'object' && !Array.isArray(x);
  const ok =
    m.kind === 'alarm' &&
    typeof m.uuid === 'string' &&
    m.uuid.length > 0 &&
    m.uuid.length <= 100 &&
    Number.isSafeInteger(m.task_id) &&
    (m.task_id as number) > 0 &&
    [0, 1, 2, 3].includes(m.level as number) &&
    isObject(m.ctn) &&
    Number.isFinite(m.notice_time) &&
    Number.isFinite(m.reported_at) &&
    (m.receiver === undefined || isObject(m.receiver)) &&
    (m.recovery === undefined || m.recovery === true) &&
    (m.handed_back === undefined || (Number.isSafeInteger(m.handed_back) && (m.handed_back as number) > 0));
  return ok ? (m as unknown as AlarmMessage) : undefined;
}

interface GroupItem {
  /** SQS message ids carrying this alarm. */
  ids: string[];
  alarm: AlarmMessage;
  /** The level after the filter. */
  level: Plan['level'];
  why: Why;
}

interface Unit {
  ids: string[];
  /** The alarms of a metric group (handed back when its metric stays contended). */
  alarms?: AlarmMessage[];
  run: () => Promise<void>;
}

export interface BatchOptions {
  /** What is left of the invocation's time, ms (Lambda's getRemainingTimeInMillis()). */
  remainingMs?: number;
}

/**
 * Processes a batch of the alarm queue. Returns the ids of the messages to retry (partial batch
 * failure): the others are done, handed back to the queue (their metric stayed contended), or
 * dropped on purpose (the task was deleted since).
 */
export async function processAlarmBatch(
  messages: QueuedAlarm[],
  deps: PipelineDeps = defaultDeps,
  options: BatchOptions = {},
): Promise<string[]> {
  const commitUntil = commitDeadline(deps.clockMs(), deps.contentionMs(), options.remainingMs);
  const failed: string[] = [];
  // One entry per uuid: copies of an alarm in one batch share its fate (acknowledged or retried).
  const byUuid = new Map<string, { ids: string[]; alarm: AlarmMessage }>();
  for (const m of messages) {
    const alarm = parseAlarmMessage(m.body);
    if (alarm) {
      const seen = byUuid.get(alarm.uuid);
      if (seen) seen.ids.push(m.id);
      else byUuid.set(alarm.uuid, { ids: [m.id], alarm });
    } else {
      logger.error('malformed alarm message; left for the dead-letter queue', { messageId: m.id });
      failed.push(m.id);
    }
  }

  const alarms = [...byUuid.values()];
  const taskIds = [...new Set(alarms.map((a) => a.alarm.task_id))];
  const loaded = await Promise.allSettled(taskIds.map((id) => deps.getTask(id)));
  const tasks = new Map<number, PromiseSettledResult<Task | undefined>>(
    taskIds.map((id, i) => [id, loaded[i]]),
  );
  // Side effects of the whole batch are collected and sent together after every alarm is recorded.
  const effects = collectEffects(deps, tasks);
  const unitDeps = effects.deps;

  const units: Unit[] = [];
  const groups = new Map<string, { task: Task; metric: string; items: GroupItem[] }>();
  for (const { ids, alarm } of alarms) {
    const t = tasks.get(alarm.task_id);
    if (!t || t.status === 'rejected') {
      logger.error('could not load the task of an alarm', { messageIds: ids, taskId: alarm.task_id });
      failed.push(...ids);
      continue;
    }
    const task = t.value;
    if (!task) {
      logger.warn('alarm of an unknown task dropped', { uuid: alarm.uuid, taskId: alarm.task_id });
      continue;
    }
    // No status check here: the report endpoint refused alarms of a stopped or paused task, and an
    // alarm accepted while the task ran is processed even if the task stopped since (it was accepted).
    const plan = planAlarm(task, alarm);
    const why = explainAlarm(task, alarm, plan);
    count('AlarmsAccepted');
    count('PipelineOutcome', { outcome: plan.kind });
    if (plan.kind === 'compressed') {
      const key = `${task.id}#${plan.metric}`;
      const g = groups.get(key) ?? { task, metric: plan.metric, items: [] };
      g.items.push({ ids, alarm, level: plan.level, why });
      groups.set(key, g);
    } else {
      units.push({ ids, run: () => processSingle(task, alarm, plan, why, unitDeps) });
    }
  }
  for (const g of groups.values()) {
    units.push({
      ids: g.items.flatMap((i) => i.ids),
      alarms: g.items.map((i) => i.alarm),
      run: () => processGroup(g.task, g.metric, g.items, unitDeps, commitUntil),
    });
  }

  const results = await Promise.allSettled(units.map((u) => u.run()));
  const contended: Unit[] = [];
  results.forEach((r, i) => {
    if (r.status === 'rejected' && r.reason instanceof MetricContended) {
      contended.push(units[i]);
    } else if (r.status === 'rejected') {
      logger.error('alarm processing failed; will be retried', {
        messageIds: units[i].ids,
        error: r.reason as Error,
      });
      failed.push(...units[i].ids);
    }
  });
  try {
    await effects.flush();
  } catch (err) {
    // Nothing is lost: every alarm of the batch comes back and re-publishes its recorded effects.
    logger.error('could not send or queue the side effects of a batch; it will be retried', {
      error: err as Error,
    });
    return messages.map((m) => m.id);
  }
  if (contended.length > 0) failed.push(...(await handBackContended(contended, deps.handBack)));
  return failed;
}

/**
 * `recordAlarm` for the alarms of one batch: the records asked for in the same turn of the event
 * loop (every unit of a batch starts at once) are stored together (AP-P2: one read and one write
 * request for up to 25), each caller told whether its alarm was new.
 */
function batchedRecordPuts(deps: PipelineDeps): (record: AlarmRecord) => Promise<'created' | 'exists'> {
  let pending: {
    record: AlarmRecord;
    done: (r: 'created' | 'exists') => void;
    fail: (e: unknown) => void;
  }[] = [];
  const flush = async () => {
    const batch = pending;
    pending = [];
    try {
      const results = await deps.repo.putAlarmRecords(batch.map((p) => p.record));
      for (const [i, p] of batch.entries()) p.done(results[i]);
    } catch (err) {
      for (const p of batch) p.fail(err);
    }
  };
  return (record) =>
    new Promise((done, fail) => {
      if (pending.length === 0) setImmediate(() => void flush());
      pending.push({ record, done, fail });
    });
}

/**
 * Pipeline deps whose publishing collects instead of sending: the events and jobs of a whole batch
 * go out together once every alarm of it is recorded (the events' first attempts made at once, the
 * jobs in a few SendMessageBatch calls: sendEffects). Events of a task without
 * a webhook URL are not queued at all (there is nobody to deliver them to).
 */
function collectEffects(deps: PipelineDeps, tasks: Map<number, PromiseSettledResult<Task | undefined>>) {
  const events = new Map<number, EventToPublish[]>();
  const notify: NotificationJob[] = [];
  const log: AlarmLogEntry[] = [];
  const hasWebhook = (taskId: number) => {
    const t = tasks.get(taskId);
    const w = t?.status === 'fulfilled' ? t.value?.receiver?.channels?.webhook : undefined;
    return typeof w === 'string' ? w !== '' : !!(w as { url?: string } | undefined)?.url;
  };
  return {
    deps: {
      ...deps,
      recordAlarm: batchedRecordPuts(deps),
      publishEvents: async (taskId: number, raised: EventToPublish[]) => {
        if (!hasWebhook(taskId)) return;
        const list = events.get(taskId);
        if (list) list.push(...raised);
        else events.set(taskId, [...raised]);
      },
      publishJobs: async (jobs: NotificationJob[]) => {
        notify.push(...jobs);
      },
      logAlarms: async (entries: AlarmLogEntry[]) => {
        log.push(...entries);
      },
    },
    // The logs after the effects, in one write: the delivery log of the webhook first attempts made
    // whatever happened (a retried batch's replays look them up), the alarm log once the batch is done
    // (a retried batch logs its alarms again). Never in the effects' way: a log write that fails
    // (after the retries of its own) costs the history those entries, not a redelivery of a batch that
    // has already gone out (an alarm that has no record would be sent again as new). Counted as
    // AlarmLogLost.
    flush: async () => {
      const delivered: WebhookAttempt[] = [];
      let failure: { reason: unknown } | undefined;
      try {
        await deps.sendEffects(
          { webhook: [...events].flatMap(([taskId, list]) => webhookBundles(taskId, list)), notify },
          delivered,
        );
      } catch (reason) {
        failure = { reason };
      }
      const entries = failure ? [] : log;
      if (entries.length > 0 || delivered.length > 0) await logBestEffort(deps, entries, delivered);
      if (failure) throw failure.reason;
    },
  };
}

/** Tries to log a batch three times (100 ms, 400 ms apart); logs and counts the loss otherwise. */
async function logBestEffort(
  deps: PipelineDeps,
  entries: AlarmLogEntry[],
  deliveries: WebhookAttempt[],
): Promise<void> {
  const atMs = nowMs();
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.logAlarms(entries, deliveries, atMs);
      return;
    } catch (err) {
      if (attempt >= 2) {
        logger.error('log entries lost (the alarms and their webhook first attempts were processed)', {
          uuids: entries.map((e) => e.uuid),
          webhookAttempts: deliveries.length,
          error: err as Error,
        });
        count('AlarmLogLost', {}, entries.length + deliveries.length);
        return;
      }
      await deps.sleep(100 * 4 ** attempt);
    }
  }
}

function buildRecord(
  task: Task,
  alarm: AlarmMessage,
  d: {
    outcome: StoredOutcome;
    level: AlarmRecord['reported_level'];
    id: number;
    now: number;
    metric?: string;
    batch?: number;
    notify?: AlarmRecord['notify'];
    k?: number;
    upgrades?: AlarmRecord['upgrades'];
    recoveryMetric?: string;
    why: Why;
    window?: AlarmRecord['window'];
    upgradeCounts?: number[];
    /** Seconds delayed work may still read the record (window flush, delay recovery). */
    keepAtLeast?: number;
  },
): AlarmRecord {
  const history: HistoryRecord = {
    id: d.id,
    uuid: alarm.uuid,
    task_id: task.id,
    batch: d.batch ?? 0,
    metric: d.metric ?? '',
    level: d.level,
    ctn: alarm.ctn,
    notice_time: alarm.notice_time,
    created_at: d.now,
  };
  return {
    uuid: alarm.uuid,
    task_id: task.id,
    outcome: d.outcome,
    history,
    reported_level: alarm.level,
    reported_at: alarm.reported_at,
    processed_at: d.now,
    // Stored with its robots sealed (one queued before robots were sealed has them in plain).
    ...(alarm.receiver ? { receiver: sealReceiverRobots(alarm.receiver) } : {}),
    selection: selectReceivers(task.receiver, factsOf(alarm, d.level), alarm.receiver),
    notify: d.notify ?? notifyOf(d.outcome),
    ...(d.k !== undefined ? { k: d.k } : {}),
    upgrades: d.upgrades ?? [],
    workflow: d.outcome === 'compressed' && task.workflow?.enable === true,
    ...(d.recoveryMetric ? { recovery_metric: d.recoveryMetric } : {}),
    why: d.why,
    ...(d.window ? { window: d.window } : {}),
    ...(d.upgradeCounts?.length ? { upgrade_counts: d.upgradeCounts } : {}),
    expires_at: d.now + Math.max(retentionDaysOf(task) * 86_400, d.keepAtLeast ?? 0),
  };
}

/**
 * A paused task holds its delayed work until the pause ends (at most 7 days); a day more of margin.
 * A compressed alarm's record outlives its window and its metric's delay recovery by this much.
 */
const HELD_WORK_MARGIN_SECONDS = 8 * 86_400;

/** The log entry of a stored alarm; a record written before records expired gets the task's retention. */
const logged = (task: Task, r: AlarmRecord) =>
  entryOfRecord(r, r.expires_at ?? r.processed_at + retentionDaysOf(task) * 86_400);

/** The log entry of an alarm that has no record (filtered out, or of a task that stores nothing). */
function loggedUnstored(task: Task, alarm: AlarmMessage, plan: Plan, why: Why, now: number): AlarmLogEntry {
  return {
    uuid: alarm.uuid,
    task_id: task.id,
    history_id: 0,
    created_at: now,
    level: plan.level,
    reported_level: alarm.level,
    decision: plan.kind,
    notify: plan.kind === 'drop' ? 'none' : 'now',
    upgrades: 0,
    stored: false,
    why,
    expires_at: now + retentionDaysOf(task) * 86_400,
  };
}

/** An alarm that does not go through a metric's state. */
async function processSingle(
  task: Task,
  alarm: AlarmMessage,
  plan: Exclude<Plan, { kind: 'compressed' }>,
  why: Why,
  deps: PipelineDeps,
) {
  if (plan.kind === 'drop') return deps.logAlarms([loggedUnstored(task, alarm, plan, why, deps.now())]);
  if (plan.kind === 'not_save_db' || (plan.kind === 'recovery' && !plan.store)) {
    const recovery = plan.kind === 'recovery';
    // A monitor's alert may be sent again (an Alertmanager group re-sent whole): with no record to
    // recognise it by, a marker does; a second time, its effects go out as replays (skipped by the
    // consumers when already delivered).
    const seenAt = alarm.dedup ? await deps.repo.markAlarmSeen(task.id, alarm.uuid, deps.now()) : undefined;
    const effects = seenAt === undefined ? deps : replaying(deps, seenAt);
    const msg = msgRef({
      uuid: alarm.uuid,
      level: plan.level,
      ctn: alarm.ctn,
      notice_time: alarm.notice_time,
    });
    const selection = selectReceivers(task.receiver, factsOf(alarm, plan.level), alarm.receiver);
    await sendNotice(
      {
        task,
        receivers: selectedReceivers(task.receiver, selection, alarm.receiver),
        scene: recovery ? 'recovery' : 'not_compress',
        jobId: `${alarm.task_id}:${alarm.uuid}:${recovery ? 'recovery' : 'not_compress'}`,
        history: msg,
        context: { type: 'not_save_db' },
        event: {
          body: event(recovery ? 'RECOVERY' : 'ALARM', 'not_save_db', { task: taskRef(task), msg }),
          eventId: `${alarm.task_id}:${alarm.uuid}:${recovery ? 'RECOVERY' : 'ALARM'}`,
        },
      },
      effects,
    );
    if (recovery && plan.metric) await deps.finishWorkflowsOfMetric({ task, metric: plan.metric });
    return deps.logAlarms([loggedUnstored(task, alarm, plan, why, deps.now())]);
  }
  const record = buildRecord(task, alarm, {
    outcome: plan.kind,
    level: plan.level,
    id: await deps.nextHistoryId(),
    now: deps.now(),
    recoveryMetric: plan.kind === 'recovery' ? plan.metric : undefined,
    why,
  });
  if ((await deps.recordAlarm(record)) === 'created') {
    await runEffects(task, record, deps);
    return deps.logAlarms([logged(task, record)]);
  }
  const stored = await deps.repo.getAlarmRecord(task.id, alarm.uuid);
  if (!stored) throw new Error(`alarm ${alarm.uuid}: record not found after a duplicate put`);
  await runEffects(task, stored, replaying(deps, stored.processed_at));
  await deps.logAlarms([logged(task, stored)]);
}

/**
 * Alarms of one metric: read the metric's state, advance it through every alarm in order, and commit
 * state, minute bucket, alarm records and due work in one transaction conditioned on the state's
 * version. Contention (another consumer committed first) re-reads and retries with jittered backoff
 * until `commitUntil` (deps.clockMs), then throws MetricContended (the alarms are handed back); a
 * commit refused all along while the state did not move throws a plain error (a real failure). Alarms
 * found already recorded are taken out and only have their side effects re-run.
 */
async function processGroup(
  task: Task,
  metric: string,
  items: GroupItem[],
  deps: PipelineDeps,
  commitUntil: number,
) {
  const strategy = strategyOf(task.compress);
  const upgrades = upgradeStrategies(task.upgrade);
  const longest = maxInterval(upgrades);
  const delay = recoveryDelaySeconds(task);
  const levels = new Map<string, Plan['level']>();
  const whys = new Map<string, Why>();
  const historyIds = new Map<string, number>();
  for (const { alarm, level, why } of items) {
    levels.set(alarm.uuid, level);
    whys.set(alarm.uuid, why);
    historyIds.set(alarm.uuid, await deps.nextHistoryId());
  }
  let pending = items.map((i) => i.alarm);
  const replays: string[] = [];
  let committed: AlarmRecord[] = [];
  const versions = new VersionWatch();
  for (let attempt = 0; pending.length > 0; attempt++) {
    const now = deps.now();
    const state = await deps.repo.getMetricState(task.id, metric);
    versions.see(state?.version);
    const buckets =
      upgrades.length > 0
        ? await deps.repo.queryMetricMinutes(task.id, metric, firstBucket(now, longest), minuteOf(now))
        : new Map<number, number>();
    const result = advanceMetric({
      state,
      taskId: task.id,
      metric,
      alarms: pending.map((a) => ({ uuid: a.uuid, historyId: historyIds.get(a.uuid) as number })),
      now,
      strategy,
      upgrades,
      buckets,
      recoveryDelay: delay,
    });
    const records = pending.map((alarm, i) => {
      const step = result.steps[i];
      return buildRecord(task, alarm, {
        outcome: 'compressed',
        level: levels.get(alarm.uuid) as Plan['level'],
        id: historyIds.get(alarm.uuid) as number,
        now,
        metric,
        batch: step.batch,
        notify: step.notify,
        k: step.k,
        upgrades: step.upgrades,
        why: whys.get(alarm.uuid) as Why,
        window: { start: step.windowStart, end: step.windowEnd },
        upgradeCounts: step.counts,
        keepAtLeast: Math.max(step.windowEnd - now, delay ?? 0) + HELD_WORK_MARGIN_SECONDS,
      });
    });
    const dues: DueItem[] = result.flushes.map((f) => ({
      kind: FLUSH_KIND,
      ref: `${task.id}:${metric}:${f.batch}`,
      due_at: f.dueAt,
      payload: { task_id: task.id, uuid: f.uuid },
    }));
    if (result.recoveryDueAt !== undefined) {
      dues.push({
        kind: RECOVERY_DELAY_KIND,
        ref: `${task.id}:${metric}`,
        due_at: result.recoveryDueAt,
        payload: { task_id: task.id, metric },
      });
    }
    const keep = Math.max(strategy.cycleSeconds, longest * 60, delay ?? 0);
    const res = await deps.repo.commitMetricGroup({
      state: result.state,
      expectedVersion: state?.version,
      stateTtl: now + keep + 86_400,
      bucket:
        result.bucketAdd > 0
          ? {
              minute: minuteOf(now),
              add: result.bucketAdd,
              ttl: (minuteOf(now) + 1) * 60 + longest * 60 + 3600,
            }
          : undefined,
      records,
      dues,
    });
    if (res.ok) {
      committed = records;
      break;
    }
    if (res.duplicates.length > 0) {
      replays.push(...res.duplicates);
      pending = pending.filter((a) => !res.duplicates.includes(a.uuid));
    }
    if (!res.conflict) continue;
    if (deps.clockMs() >= commitUntil) {
      // Contention only if someone else moved the state meanwhile (one more read tells, if need be).
      if (!versions.moved) versions.see((await deps.repo.getMetricState(task.id, metric))?.version);
      if (versions.moved) throw new MetricContended(metric, attempt + 1);
      throw new Error(
        `metric ${metric}: no commit after ${attempt + 1} attempts, and its state did not move`,
      );
    }
    await deps.sleep(commitBackoffMs(attempt));
  }
  const recorded = [...committed];
  for (const r of committed) await runEffects(task, r, deps);
  for (const uuid of replays) {
    const r = await deps.repo.getAlarmRecord(task.id, uuid);
    if (r) {
      await runEffects(task, r, replaying(deps, r.processed_at));
      recorded.push(r);
    }
  }
  await deps.logAlarms(recorded.map((r) => logged(task, r)));
}

function alarmNotice(task: Task, record: AlarmRecord, type: string): Notice {
  const history = historyRef(record.history);
  const scene = type === 'compressed' ? 'compressed' : 'not_compress';
  return {
    task,
    receivers: selectedReceivers(task.receiver, record.selection, record.receiver),
    scene,
    jobId: `${record.task_id}:${record.uuid}:${scene}`,
    history,
    context: { type },
    event: {
      body: event('ALARM', type, { task: taskRef(task), history }),
      eventId: `${record.task_id}:${record.uuid}:ALARM`,
    },
  };
}

function recoveryNotice(task: Task, record: AlarmRecord): Notice {
  const history = historyRef(record.history);
  return {
    task,
    receivers: selectedReceivers(task.receiver, record.selection, record.receiver),
    scene: 'recovery',
    jobId: `${record.task_id}:${record.uuid}:recovery`,
    history,
    context: { type: 'recovery' },
    event: {
      body: event('RECOVERY', 'recovery', { task: taskRef(task), history }),
      eventId: `${record.task_id}:${record.uuid}:RECOVERY`,
    },
  };
}

function upgradeNotice(
  task: Task,
  record: AlarmRecord,
  fire: AlarmRecord['upgrades'][number],
): Notice | undefined {
  const s = task.upgrade?.strategies?.[fire.index];
  // The configuration changed since the decision: that strategy no longer exists.
  if (!s || `${fire.index}.${s.interval}.${s.count}` !== fire.key) return undefined;
  const history = historyRef(record.history);
  const receivers =
    s.reuse_receiver === 1
      ? selectedReceivers(task.receiver, record.selection, record.receiver)
      : s.receiver
        ? [s.receiver]
        : [];
  // The rule without its receiver: templates may print `{context.rule}` and robots carry secrets.
  const rule = { interval: s.interval, count: s.count, level: s.level, reuse_receiver: s.reuse_receiver };
  return {
    task,
    receivers,
    scene: 'upgrade',
    jobId: `${record.task_id}:${record.uuid}:upgrade:${fire.key}`,
    history,
    context: { rule, zcount: fire.zcount },
    event: {
      body: event('UPGRADE', 'upgrade', { task: taskRef(task), history }),
      eventId: `${record.task_id}:${record.uuid}:UPGRADE:${fire.key}`,
    },
  };
}

/**
 * Deps for re-running the effects of an alarm recorded before (a redelivered message): its events and
 * notification jobs are marked as replays, so their consumers first check whether each was delivered
 * (since the record was written) and send only what was not.
 */
/** Effects published again for an alarm first processed at `processedAt` (Unix seconds). */
function replaying(deps: PipelineDeps, processedAt: number): PipelineDeps {
  const since = processedAt * 1000 - 1000;
  return {
    ...deps,
    publishEvents: (taskId, events) =>
      deps.publishEvents(
        taskId,
        events.map((e) => ({ ...e, replaySinceMs: since })),
      ),
    publishJobs: (jobs) => deps.publishJobs(jobs.map((j) => ({ ...j, replay: true }))),
  };
}

/** The side effects of a recorded alarm, in stage order (upgrade -> workflow -> notify). Idempotent. */
async function runEffects(task: Task, record: AlarmRecord, deps: PipelineDeps): Promise<void> {
  if (record.outcome === 'recovery') {
    await sendNotice(recoveryNotice(task, record), deps);
    if (record.recovery_metric) await deps.finishWorkflowsOfMetric({ task, metric: record.recovery_metric });
    return;
  }
  for (const fire of record.upgrades ?? []) {
    const notice = upgradeNotice(task, record, fire);
    if (notice) await sendNotice(notice, deps);
  }
  if (record.notify !== 'now') return;
  if (record.workflow) await deps.createWorkflow({ task, history: record.history });
  await sendNotice(alarmNotice(task, record, record.outcome), deps);
}

// ---- Due work -----------------------------------------------------------------------------------

/** Holds work of a paused task until it runs again; undefined when the task runs. */
function heldFor(task: Task, now: number): DueResult | 'drop' | undefined {
  const status = effectiveStatus(task, now);
  if (status === TASK_RUNNING) return undefined;
  if (status === TASK_PAUSED) return { reschedule: Math.max(task.paused_until ?? 0, now + 60) };
  return 'drop';
}

/**
 * `compress-flush`: the delay strategy's window ended; its first alarm is notified once (events and
 * jobs carry the same ids as an inline notification would). Held while the task is paused, dropped
 * when it is stopped or deleted.
 */
export async function flushCompressWindow(item: DueItem, now: number, deps: PipelineDeps = defaultDeps) {
  const { task_id, uuid } = item.payload as { task_id: number; uuid: string };
  const task = await deps.getTask(task_id);
  if (!task) return undefined;
  const held = heldFor(task, now);
  if (held === 'drop') return undefined;
  if (held) return held;
  const record = await deps.repo.getAlarmRecord(task.id, uuid);
  if (!record) {
    logger.error('compress flush: alarm record not found', { uuid });
    return undefined;
  }
  if (task.workflow?.enable) await deps.createWorkflow({ task, history: record.history });
  await sendNotice(alarmNotice(task, record, 'compressed'), deps);
  return undefined;
}

/**
 * `recovery-delay`: at most one pending item per metric (the metric state's `recovery_pending`).
 * When it runs, it checks that no alarm of the metric came within the delay after the last one: if
 * one did, it re-arms for the last alarm's time plus the delay; otherwise the last alarm recovers
 * (RECOVERY event and `recovery` notifications with its history, open workflows of the metric
 * finished) and the pending flag is cleared, conditioned on the state not having moved meanwhile.
 */
export async function runRecoveryDelay(
  item: DueItem,
  now: number,
  deps: PipelineDeps = defaultDeps,
): Promise<DueResult> {
  const { task_id, metric } = item.payload as { task_id: number; metric: string };
  const state = await deps.repo.getMetricState(task_id, metric);
  if (!state?.recovery_pending) return undefined;
  const task = await deps.getTask(task_id);
  const delay = task ? recoveryDelaySeconds(task) : undefined;
  const held = task ? heldFor(task, now) : 'drop';
  if (!task || delay === undefined || held === 'drop') {
    return (await deps.repo.clearRecoveryPending(task_id, metric, state.version))
      ? undefined
      : { reschedule: now + 60 };
  }
  if (held) return held;
  const dueAt = (state.last_at ?? 0) + delay;
  if (now < dueAt) return { reschedule: dueAt };
  const record = state.last_uuid ? await deps.repo.getAlarmRecord(task.id, state.last_uuid) : undefined;
  if (record) {
    await sendNotice(recoveryNotice(task, record), deps);
    await deps.finishWorkflowsOfMetric({ task, metric });
  }
  // An alarm came in meanwhile: it found the check pending, so keep it armed.
  return (await deps.repo.clearRecoveryPending(task_id, metric, state.version))
    ? undefined
    : { reschedule: now + 60 };
}
