import { testTask as baseTask } from '../tasks/test-task.ts';
import type { AlarmMessage, NotificationJob, WebhookBody } from '../../contracts/messages.ts';
import type { DueItem } from '../due/repository.ts';
import type { Task } from '../tasks/model.ts';
import type { AlarmRecord, MetricState } from './model.ts';
import type { PipelineDeps } from './pipeline-deps.ts';
import type { AlarmLogEntry } from './log.ts';
import type { CommitResult, MetricCommit } from './repository.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';

/**
 * Test support of the alarm pipeline's unit tests: a task, alarms and in-memory stand-ins for the
 * pipeline's adapters.
 */

/** The test task has a webhook, so its events are queued (they are not for a task without one). */
export const testTask: typeof baseTask = (over = {}) =>
  baseTask({ receiver: { channels: { email: [1], webhook: 'https://hooks.example.com/in' } }, ...over });

/** A delivered first attempt of an event, as the webhook delivery records it. */
export const firstAttempt = (taskId: number, eventId: string): WebhookAttempt => ({
  event_id: eventId,
  task_id: taskId,
  attempt: 1,
  event: 'ALARM',
  type: 'compress_disable',
  outcome: 'delivered',
  status: 200,
  duration_ms: 1,
  at_ms: 1_700_000_000_000,
  at: 1_700_000_000,
});

/**
 * In-memory stand-ins for the adapters, with the same conditional semantics as the DynamoDB
 * repository (records written once, state conditioned on its version, transactions all-or-nothing).
 */
export function fakes(task: Task | undefined, opts: { conflicts?: number } = {}) {
  const records = new Map<string, AlarmRecord>();
  const states = new Map<string, MetricState>();
  const buckets = new Map<string, number>();
  const dues: DueItem[] = [];
  const events: { taskId: number; body: WebhookBody; eventId: string; replaySinceMs?: number }[] = [];
  const jobs: NotificationJob[] = [];
  const puts: number[] = [];
  const log: string[] = [];
  const workflows: string[] = [];
  const finished: string[] = [];
  const logged: AlarmLogEntry[] = [];
  const loggedDeliveries: WebhookAttempt[] = [];
  const logTimes: (number | undefined)[] = [];
  let conflicts = opts.conflicts ?? 0;
  /** Serial lanes held, by `<task>#<metric>`, and what was done with them. */
  const lanes = new Map<string, { token: string; untilMs: number }>();
  const laneLog: string[] = [];
  let nextId = 1000;
  let clock = 1_700_000_000;
  let elapsedMs = 0;
  const handedBack: AlarmMessage[] = [];
  let failPublish = 0;
  let failLog = 0;
  const counted: { name: string; dims: Record<string, string | number>; value: number }[] = [];
  const measured: { name: string; value: number }[] = [];
  const deps: PipelineDeps = {
    now: () => clock,
    nowMs: () => clock * 1000,
    count: (name, dims = {}, value = 1) => {
      counted.push({ name, dims, value });
    },
    measure: (name, value) => {
      measured.push({ name, value });
    },
    getTask: async () => task,
    nextHistoryId: async () => ++nextId,
    recordAlarm: async () => {
      throw new Error('a batch stores its records together');
    },
    getAlarmGroups: async () => [],
    publishJobs: async (j) => {
      jobs.push(...j);
      log.push(...j.map((x) => `job ${x.job_id}`));
    },
    publishEvents: async (taskId, e) => {
      if (failPublish > 0) {
        failPublish--;
        throw new Error('queue down');
      }
      for (const x of e) {
        events.push({ taskId, body: x.body, eventId: x.eventId ?? '' });
        log.push(`event ${x.eventId}`);
      }
    },
    sendEffects: async ({ webhook, notify }, delivered) => {
      if (webhook.length > 0 && failPublish > 0) {
        failPublish--;
        throw new Error('queue down');
      }
      for (const b of webhook) {
        for (const m of b.events) {
          events.push({
            taskId: b.task_id,
            body: m.body,
            eventId: m.event_id,
            replaySinceMs: m.replay_since_ms,
          });
          log.push(`event ${m.event_id}`);
        }
      }
      jobs.push(...notify);
      log.push(...notify.map((x) => `job ${x.job_id}`));
      // The settling first attempts: each event delivered.
      delivered.push(...webhook.flatMap((b) => b.events.map((m) => firstAttempt(b.task_id, m.event_id))));
    },
    createWorkflow: async ({ history }) => {
      workflows.push(history.uuid);
      log.push(`workflow ${history.uuid}`);
      return { id: 1, created: true };
    },
    finishWorkflowsOfMetric: async ({ metric }) => {
      finished.push(metric);
      return [];
    },
    sleep: async (ms) => {
      elapsedMs += ms;
    },
    clockMs: () => elapsedMs,
    contentionMs: () => 20_000,
    handBack: async (alarms) => {
      handedBack.push(...alarms);
    },
    logAlarms: async (entries, deliveries = [], atMs) => {
      logTimes.push(atMs);
      if (failLog > 0) {
        failLog--;
        throw new Error('table down');
      }
      logged.push(...entries);
      loggedDeliveries.push(...deliveries);
    },
    repo: {
      getAlarmRecord: async (taskId: number, uuid: string) => records.get(`${taskId}#${uuid}`),
      putAlarmRecords: async (rs: AlarmRecord[]) => {
        puts.push(rs.length);
        return rs.map((r) => {
          if (records.has(`${r.task_id}#${r.uuid}`)) return 'exists' as const;
          records.set(`${r.task_id}#${r.uuid}`, structuredClone(r));
          return 'created' as const;
        });
      },
      getMetricState: async (taskId: number, metric: string) =>
        structuredClone(states.get(`${taskId}#${metric}`)),
      queryMetricMinutes: async (taskId: number, metric: string, from: number, to: number) => {
        const out = new Map<number, number>();
        for (let m = from; m <= to; m++) {
          const n = buckets.get(`${taskId}#${metric}#${m}`);
          if (n) out.set(m, n);
        }
        return out;
      },
      commitMetricGroup: async (c: MetricCommit): Promise<CommitResult> => {
        const key = `${c.state.task_id}#${c.state.metric}`;
        if (conflicts > 0) {
          conflicts--;
          return { ok: false, duplicates: [], conflict: true };
        }
        if (states.get(key)?.version !== c.expectedVersion)
          return { ok: false, duplicates: [], conflict: true };
        const duplicates = c.records.filter((r) => records.has(`${r.task_id}#${r.uuid}`)).map((r) => r.uuid);
        if (duplicates.length) return { ok: false, duplicates, conflict: false };
        states.set(key, structuredClone(c.state));
        if (c.bucket) {
          const bk = `${key}#${c.bucket.minute}`;
          buckets.set(bk, (buckets.get(bk) ?? 0) + c.bucket.add);
        }
        for (const r of c.records) records.set(`${r.task_id}#${r.uuid}`, structuredClone(r));
        dues.push(...c.dues);
        return { ok: true };
      },
      clearRecoveryPending: async (taskId: number, metric: string, version: number) => {
        const s = states.get(`${taskId}#${metric}`);
        if (!s || s.version !== version) return false;
        states.set(`${taskId}#${metric}`, { ...s, recovery_pending: false, version: version + 1 });
        return true;
      },
      reserveHistoryIds: async () => 0,
      takeMetricLane: async (
        taskId: number,
        metric: string,
        token: string,
        nowMs: number,
        untilMs: number,
      ) => {
        const key = `${taskId}#${metric}`;
        const held = lanes.get(key);
        if (held && held.untilMs >= nowMs && held.token !== token) return false;
        lanes.set(key, { token, untilMs });
        laneLog.push(`take ${key}`);
        return true;
      },
      releaseMetricLane: async (taskId: number, metric: string, token: string) => {
        const key = `${taskId}#${metric}`;
        if (lanes.get(key)?.token === token) lanes.set(key, { token, untilMs: 0 });
        laneLog.push(`release ${key}`);
      },
    } as unknown as PipelineDeps['repo'],
  };
  return {
    deps,
    lanes,
    laneLog,
    counted,
    measured,
    handedBack,
    records,
    puts,
    states,
    dues,
    events,
    jobs,
    log,
    workflows,
    finished,
    logged,
    loggedDeliveries,
    logTimes,
    advance: (s: number) => {
      clock += s;
    },
    failNextPublish: (n = 1) => {
      failPublish = n;
    },
    failNextLog: (n = 1) => {
      failLog = n;
    },
  };
}

let seq = 0;
export function alarm(ctn: Record<string, unknown>, over: Partial<AlarmMessage> = {}): AlarmMessage {
  seq++;
  return {
    kind: 'alarm',
    uuid: `u-${seq}`,
    task_id: 42,
    level: 1,
    ctn,
    notice_time: 1_700_000_000,
    reported_at: 1_700_000_000,
    ...over,
  };
}
export const msg = (a: AlarmMessage) => ({ id: `m-${a.uuid}`, body: JSON.stringify(a) });

export const full = {
  enable: true,
  method: 4 as const,
  strategy: 1 as const,
  strategy_cycle: 1,
  not_match: 1 as const,
};
