import type { AlarmGroup, User } from '../directory/model.ts';
import type { DueItem } from '../due/repository.ts';
import type { Task } from '../tasks/model.ts';
import { isOpen, type PipelineRecord, type Workflow } from '../workflows/model.ts';
import type { WorkflowChange } from '../workflows/repository.ts';
import type { WorkflowDeps } from '../workflows/workflow-deps.ts';
import type { Collector } from './collector.ts';
import type { VirtualClock, VirtualDue } from './memory-due.ts';

/**
 * The workflows of a replay, in memory: what the workflow repository would store (workflows, their
 * pipeline records, the alarm guard), with the same conditions (one workflow per alarm, changes under
 * status and version, reminders recorded while their workflow kept its status and epoch), so the
 * production workflow code (creation, announcements, reminders, finishing by a recovery) runs on it.
 * Nobody acts on a workflow in a replay: it stays pending until a recovery finishes it.
 */
export class MemoryWorkflows {
  private workflows = new Map<number, Workflow>();
  private byAlarm = new Map<string, number>();
  private pipelines = new Map<string, PipelineRecord>();
  private lastId = 0;
  /** Reminders fired (recorded on their workflow). */
  reminded = 0;

  owner(workflowId: number): string | undefined {
    return this.workflows.get(workflowId)?.history.uuid;
  }

  /** Workflows opened so far. */
  get opened(): number {
    return this.workflows.size;
  }

  /** A copy (a forked replay world goes on from the same workflows). */
  clone(): MemoryWorkflows {
    const copy = new MemoryWorkflows();
    copy.workflows = new Map([...this.workflows].map(([id, w]) => [id, structuredClone(w)]));
    copy.byAlarm = new Map(this.byAlarm);
    copy.pipelines = new Map(this.pipelines);
    copy.lastId = this.lastId;
    return copy;
  }

  deps(world: {
    clock: VirtualClock;
    due: VirtualDue;
    collector: Collector;
    task: () => Task;
    groups: (ids: number[]) => AlarmGroup[];
    users: (uids: number[]) => User[];
  }): WorkflowDeps {
    const pipeKey = (workflowId: number, sk: string) => `${workflowId}\u0000${sk}`;
    const repo = {
      allocateWorkflowId: async () => ++this.lastId,
      getWorkflowIdOfAlarm: async (_taskId: number, uuid: string) => this.byAlarm.get(uuid),
      insertWorkflow: async (input: { workflow: Workflow; pipeline: PipelineRecord; outbox: DueItem }) => {
        const { workflow, pipeline, outbox } = input;
        if (this.byAlarm.has(workflow.history.uuid)) return 'duplicate' as const;
        this.workflows.set(workflow.id, structuredClone(workflow));
        this.byAlarm.set(workflow.history.uuid, workflow.id);
        this.pipelines.set(pipeKey(pipeline.workflow_id, pipeline.sk), pipeline);
        world.due.put(outbox);
        return 'created' as const;
      },
      getWorkflow: async (id: number) => structuredClone(this.workflows.get(id)),
      getWorkflows: async (ids: number[]) =>
        new Map(
          ids.flatMap((id) => {
            const w = this.workflows.get(id);
            return w ? [[id, structuredClone(w)] as const] : [];
          }),
        ),
      getPipelineRecords: async (refs: { workflow_id: number; sk: string }[]) =>
        refs.flatMap((r) => this.pipelines.get(pipeKey(r.workflow_id, r.sk)) ?? []),
      applyWorkflowChanges: async (changes: WorkflowChange[], outbox: DueItem) => {
        const moved = changes.some((c) => {
          const now = this.workflows.get(c.before.id);
          return !now || now.version !== c.before.version || now.status !== c.before.status;
        });
        if (moved) return 'conflict' as const;
        for (const c of changes) {
          this.workflows.set(c.after.id, structuredClone(c.after));
          this.pipelines.set(pipeKey(c.pipeline.workflow_id, c.pipeline.sk), c.pipeline);
        }
        world.due.put(outbox);
        return 'ok' as const;
      },
      listOpenWorkflowIdsOfMetric: async (_taskId: number, metric: string) =>
        [...this.workflows.values()].filter((w) => w.metric === metric && isOpen(w.status)).map((w) => w.id),
      insertReminderRecord: async (expect: { status: number; epoch: number }, pipeline: PipelineRecord) => {
        const w = this.workflows.get(pipeline.workflow_id);
        if (!w || w.status !== expect.status || w.epoch !== expect.epoch) return 'moved-on' as const;
        const key = pipeKey(pipeline.workflow_id, pipeline.sk);
        if (this.pipelines.has(key)) return 'already-recorded' as const;
        this.pipelines.set(key, pipeline);
        this.reminded++;
        return 'recorded' as const;
      },
    };
    // A replay keeps no workflow counts.
    const counts = {
      countShardOf: () => 0,
      applyWorkflowCounts: async () => 'applied' as const,
    };
    return {
      now: () => world.clock.now,
      repo: repo as unknown as WorkflowDeps['repo'],
      counts: counts as unknown as WorkflowDeps['counts'],
      getUsers: async (uids: number[]) => world.users(uids),
      getTask: async (id: number) => (id === world.task().id ? world.task() : undefined),
      getDepartment: async () => undefined,
      getAlarmGroups: async (ids: number[]) => world.groups(ids),
      publishWebhookEvents: world.collector.publishEvents,
      publishJobs: world.collector.publishJobs,
      putDue: async (d: DueItem) => world.due.put(d),
      deleteDue: async (d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>) => world.due.delete(d),
    };
  }
}
