import type { AlarmGroup } from '../directory/model.ts';
import type { Task } from '../tasks/model.ts';
import type { AlarmLogEntry } from '../alarms/log.ts';
import type { AlarmRecord, MetricState } from '../alarms/model.ts';
import type { PipelineDeps } from '../alarms/pipeline-deps.ts';
import type { CommitResult, MetricCommit } from '../alarms/repository.ts';
import { createWorkflow, finishWorkflowsOfMetric } from '../workflows/service.ts';
import type { WorkflowDeps } from '../workflows/workflow-deps.ts';
import type { Collector } from './collector.ts';
import type { VirtualClock, VirtualDue } from './memory-due.ts';

/**
 * The storage of the alarm pipeline for a replay, in memory: alarm records, metric states and minute
 * buckets, with the conditions of the DynamoDB repository (a record written once, a state committed
 * under its version, all of a group's writes or none), so the production pipeline modules run on it
 * unchanged. The due work they schedule goes to the replay's virtual due queue, what they publish to
 * its collector, and the clock they read is the replay's.
 */
export class MemoryPipeline {
  records = new Map<string, AlarmRecord>();
  private states = new Map<string, MetricState>();
  private buckets = new Map<string, number>();
  private seen = new Map<string, number>();
  /** The last log entry of each alarm processed (its decision, stored or not). */
  readonly logged = new Map<string, AlarmLogEntry>();
  /** The history id the next alarm gets (the replay hands each alarm the id it was recorded with). */
  historyId = 0;

  metricState(metric: string): MetricState | undefined {
    return this.states.get(metric);
  }

  /** A copy of the stored state (a forked replay world goes on from it; the log starts empty). */
  clone(): MemoryPipeline {
    const copy = new MemoryPipeline();
    copy.records = new Map(this.records);
    copy.states = new Map([...this.states].map(([k, s]) => [k, structuredClone(s)]));
    copy.buckets = new Map(this.buckets);
    copy.seen = new Map(this.seen);
    return copy;
  }

  deps(world: {
    clock: VirtualClock;
    due: VirtualDue;
    collector: Collector;
    task: () => Task;
    groups: (ids: number[]) => AlarmGroup[];
    workflows: WorkflowDeps;
  }): PipelineDeps {
    const bucketKey = (metric: string, minute: number) => `${metric}\u0000${minute}`;
    let elapsedMs = 0;
    const repo = {
      getAlarmRecord: async (_taskId: number, uuid: string) => this.records.get(uuid),
      getAlarmRecords: async (refs: { taskId: number; uuid: string }[]) =>
        refs.map((r) => this.records.get(r.uuid)),
      putAlarmRecords: async (records: AlarmRecord[]) =>
        records.map((r) => {
          if (this.records.has(r.uuid)) return 'exists' as const;
          this.records.set(r.uuid, r);
          return 'created' as const;
        }),
      getMetricState: async (_taskId: number, metric: string) => this.states.get(metric),
      queryMetricMinutes: async (_taskId: number, metric: string, from: number, to: number) => {
        const out = new Map<number, number>();
        for (let m = from; m <= to; m++) {
          const n = this.buckets.get(bucketKey(metric, m));
          if (n) out.set(m, n);
        }
        return out;
      },
      commitMetricGroup: async (c: MetricCommit): Promise<CommitResult> => {
        if (this.states.get(c.state.metric)?.version !== c.expectedVersion)
          return { ok: false, duplicates: [], conflict: true };
        const duplicates = c.records.filter((r) => this.records.has(r.uuid)).map((r) => r.uuid);
        if (duplicates.length > 0) return { ok: false, duplicates, conflict: false };
        this.states.set(c.state.metric, structuredClone(c.state));
        if (c.bucket) {
          const k = bucketKey(c.state.metric, c.bucket.minute);
          this.buckets.set(k, (this.buckets.get(k) ?? 0) + c.bucket.add);
        }
        for (const r of c.records) this.records.set(r.uuid, r);
        for (const d of c.dues) world.due.put(d);
        return { ok: true };
      },
      clearRecoveryPending: async (_taskId: number, metric: string, version: number) => {
        const s = this.states.get(metric);
        if (!s || s.version !== version) return false;
        this.states.set(metric, { ...s, recovery_pending: false, version: version + 1 });
        return true;
      },
      markAlarmSeen: async (_taskId: number, uuid: string, now: number) => {
        const first = this.seen.get(uuid);
        if (first === undefined) this.seen.set(uuid, now);
        return first;
      },
    };
    return {
      now: () => world.clock.now,
      nowMs: () => world.clock.now * 1000,
      // A replay's decisions are no alarms the service accepted: nothing reaches its metrics.
      count: () => undefined,
      measure: () => undefined,
      getTask: async (id: number) => (id === world.task().id ? world.task() : undefined),
      repo: repo as unknown as PipelineDeps['repo'],
      nextHistoryId: async () => this.historyId,
      recordAlarm: async (record: AlarmRecord) => (await repo.putAlarmRecords([record]))[0],
      getAlarmGroups: async (ids: number[]) => world.groups(ids),
      publishJobs: world.collector.publishJobs,
      publishEvents: world.collector.publishEvents,
      sendEffects: world.collector.sendEffects,
      createWorkflow: (input) => createWorkflow(input, world.workflows),
      finishWorkflowsOfMetric: (input) => finishWorkflowsOfMetric(input, world.workflows),
      logAlarms: async (entries: AlarmLogEntry[]) => {
        for (const e of entries) this.logged.set(e.uuid, e);
      },
      sleep: async (ms: number) => {
        elapsedMs += ms;
      },
      clockMs: () => elapsedMs,
      contentionMs: () => 20_000,
      handBack: async () => {
        // One consumer, in memory: a metric is never contended.
        throw new Error('a replay hands nothing back');
      },
    };
  }
}
