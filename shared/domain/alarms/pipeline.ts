import { randomUUID } from 'node:crypto';
import { batchPerTurn } from '../../batch.ts';
import { isObject, parseJson } from '../../json.ts';
import { logger } from '../../log.ts';
import type { AlarmMessage, NotificationJob } from '../../contracts/messages.ts';
import type { Task } from '../tasks/model.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';
import { type EventToPublish, webhookBundles } from '../events/publish.ts';
import {
  commitDeadline,
  handBackContended,
  LANE_BUDGET_MS,
  MetricContended,
  needsLane,
} from './contention.ts';
import { explainAlarm } from './explain.ts';
import type { AlarmLogEntry } from './log.ts';
import { planAlarm } from './model.ts';
import { defaultDeps, type PipelineDeps } from './pipeline-deps.ts';
import { type GroupItem, type LaneTicket, processGroup, processSingle } from './process.ts';

/**
 * The alarm processing pipeline (API guide §9): recovery -> filter -> compress -> upgrade -> workflow
 * -> notify, for each AlarmMessage of the alarm queue.
 *
 * At-least-once, idempotent per alarm uuid: every decision is written once with the stored alarm in
 * its record `ALARM#<uuid>` (conditional put; for compressed alarms in the same transaction that
 * advances the metric's window and counters), and only then are the side effects run: webhook events
 * and notification jobs with ids derived from the uuid, the workflow (idempotent per uuid). A
 * redelivered alarm finds its record and re-runs the side effects only, so counters are never
 * counted twice and nothing is lost if the consumer dies between the write and the publishing.
 */
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
    deps.count('AlarmsAccepted');
    deps.count('PipelineOutcome', { outcome: plan.kind });
    if (plan.kind === 'compressed') {
      const key = `${task.id}#${plan.metric}`;
      const g = groups.get(key) ?? { task, metric: plan.metric, items: [] };
      g.items.push({ ids, alarm, level: plan.level, why });
      groups.set(key, g);
    } else {
      units.push({ ids, run: () => processSingle(task, alarm, plan, why, unitDeps) });
    }
  }
  // Each group may take its metric's serial lane (contention.ts) for the rest of the invocation.
  const laneUntilMs = deps.nowMs() + (options.remainingMs ?? LANE_BUDGET_MS);
  const laneRetryUntil = commitDeadline(
    deps.clockMs(),
    Math.max(LANE_BUDGET_MS, deps.contentionMs()),
    options.remainingMs,
  );
  for (const g of groups.values()) {
    const groupAlarms = g.items.map((i) => i.alarm);
    const lane: LaneTicket = {
      token: randomUUID(),
      untilMs: laneUntilMs,
      // Handed back too often: through the lane first, for as long as the invocation allows.
      first: needsLane(groupAlarms),
      retryUntil: laneRetryUntil,
    };
    units.push({
      ids: g.items.flatMap((i) => i.ids),
      alarms: groupAlarms,
      run: () => processGroup(g.task, g.metric, g.items, unitDeps, commitUntil, lane),
    });
  }

  // Each unit's effects go out as soon as it finishes (with those of the units that finished while a
  // send was running: effects.send), so a slow unit (a contended metric) holds back only its own.
  const results = await Promise.allSettled(
    units.map(async (u) => {
      await u.run();
      await effects.send();
    }),
  );
  const contended: Unit[] = [];
  let unsent: unknown;
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') return;
    if (r.reason instanceof MetricContended) contended.push(units[i]);
    else if (r.reason instanceof EffectsNotSent) unsent = r.reason.cause;
    else {
      logger.error('alarm processing failed; will be retried', {
        messageIds: units[i].ids,
        error: r.reason as Error,
      });
      failed.push(...units[i].ids);
    }
  });
  try {
    await effects.finish(unsent);
  } catch (err) {
    // Nothing is lost: every alarm of the batch comes back and re-publishes its recorded effects.
    logger.error('could not send or queue the side effects of a batch; it will be retried', {
      error: err as Error,
    });
    return messages.map((m) => m.id);
  }
  const lagged = new Set([...failed, ...contended.flatMap((u) => u.ids)]);
  const now = deps.nowMs();
  for (const { ids, alarm } of alarms)
    if (!ids.some((id) => lagged.has(id)))
      deps.measure('PipelineLagMs', Math.max(0, now - reportedMsOf(alarm)));
  if (contended.length > 0) failed.push(...(await handBackContended(contended, deps.handBack)));
  return failed;
}

/** When a report was accepted (ms): its message says, or (a message of an earlier version) its second. */
const reportedMsOf = (a: AlarmMessage) => a.reported_ms ?? a.reported_at * 1000;

/** A unit whose effects could not be sent: the whole batch comes back (effects.finish throws). */
class EffectsNotSent extends Error {
  override readonly name = 'EffectsNotSent';
}

/**
 * Pipeline deps whose publishing collects instead of sending: the events and jobs of the units of a
 * batch go out as each finishes (`send`), those of the units that finish while a send is running
 * together in the next one (the events' first attempts made at once, the jobs in a few
 * SendMessageBatch calls: sendEffects). Events of a task without a webhook URL are not queued at all
 * (there is nobody to deliver them to). `finish` waits for the last send and writes the logs.
 */
function collectEffects(deps: PipelineDeps, tasks: Map<number, PromiseSettledResult<Task | undefined>>) {
  let events = new Map<number, EventToPublish[]>();
  let notify: NotificationJob[] = [];
  const log: AlarmLogEntry[] = [];
  const delivered: WebhookAttempt[] = [];
  let sending: Promise<void> = Promise.resolve();
  let failure: { reason: unknown } | undefined;
  const hasWebhook = (taskId: number) => {
    const t = tasks.get(taskId);
    const w = t?.status === 'fulfilled' ? t.value?.receiver?.channels?.webhook : undefined;
    return typeof w === 'string' ? w !== '' : !!(w as { url?: string } | undefined)?.url;
  };
  /** Sends what was collected so far; the settling first attempts are kept for the log. */
  const sendCollected = async () => {
    const webhook = [...events].flatMap(([taskId, list]) => webhookBundles(taskId, list));
    const jobs = notify;
    events = new Map();
    notify = [];
    if (webhook.length === 0 && jobs.length === 0) return;
    try {
      await deps.sendEffects({ webhook, notify: jobs }, delivered);
    } catch (reason) {
      failure ??= { reason };
    }
  };
  return {
    deps: {
      ...deps,
      // The records asked for in the same turn (every unit of a batch starts at once) are stored
      // together (AP-P2: one request for up to 25), each caller told whether its alarm was new.
      recordAlarm: batchPerTurn(deps.repo.putAlarmRecords),
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
    /**
     * Sends what the units that finished so far raised, after the send in flight (so one unit's
     * effects never wait for another unit's work, only for a send); rejects (EffectsNotSent) when a
     * send failed.
     */
    send: async () => {
      sending = sending.then(sendCollected);
      await sending;
      if (failure)
        throw new EffectsNotSent('the effects of a batch could not be sent', { cause: failure.reason });
    },
    // The logs after the effects, in one write: the delivery log of the webhook first attempts made
    // whatever happened (a retried batch's replays look them up), the alarm log once the batch is done
    // (a retried batch logs its alarms again). Never in the effects' way: a log write that fails
    // (after the retries of its own) costs the history those entries, not a redelivery of a batch that
    // has already gone out (an alarm that has no record would be sent again as new). Counted as
    // AlarmLogLost.
    finish: async (unsent?: unknown) => {
      // What the units that failed raised before failing (their alarms come back; replays then).
      sending = sending.then(sendCollected);
      await sending;
      const reason = failure?.reason ?? unsent;
      const entries = reason === undefined ? log : [];
      if (entries.length > 0 || delivered.length > 0) await logBestEffort(deps, entries, delivered);
      if (reason !== undefined) throw reason;
    },
  };
}

/** Tries to log a batch three times (100 ms, 400 ms apart); logs and counts the loss otherwise. */
async function logBestEffort(
  deps: PipelineDeps,
  entries: AlarmLogEntry[],
  deliveries: WebhookAttempt[],
): Promise<void> {
  const atMs = deps.nowMs();
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
        deps.count('AlarmLogLost', {}, entries.length + deliveries.length);
        return;
      }
      await deps.sleep(100 * 4 ** attempt);
    }
  }
}
