import type { AlarmMessage } from '../../contracts/messages.ts';
import type { AlarmGroup, User } from '../directory/model.ts';
import type { DueItem } from '../due/repository.ts';
import type { DueHandler } from '../due/runner.ts';
import type { Task } from '../tasks/model.ts';
import { webhookOf } from '../tasks/references.ts';
import { runAnnouncement, ANNOUNCE_KIND, REMIND_KIND } from '../workflows/announce.ts';
import { fireReminder } from '../workflows/reminders.ts';
import {
  FLUSH_KIND,
  flushCompressWindow,
  flushItem,
  RECOVERY_DELAY_KIND,
  runRecoveryDelay,
} from '../alarms/delayed.ts';
import { runEffects } from '../alarms/effects.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { processAlarmBatch } from '../alarms/pipeline.ts';
import { Collector } from './collector.ts';
import { VirtualClock, VirtualDue } from './memory-due.ts';
import { MemoryPipeline } from './memory-pipeline.ts';
import { MemoryWorkflows } from './memory-workflows.ts';

/**
 * One simulated run of a replay: a task's configuration, a virtual clock, in-memory storage and a
 * collector for what would be sent, with the production code driven over it: the alarm consumer's
 * batch function for each alarm at its time, the due-work handlers (delayed flushes, delay
 * recoveries, workflow announcements and reminders) at theirs.
 */

/** The directory as the replay resolves receivers with it (today's: it keeps no history). */
export interface ReplayDirectory {
  groups: Map<number, AlarmGroup>;
  users: Map<number, User>;
}

/** Due work that belongs to an alarm and runs after the window's end (flushes, delay recoveries). */
const TAIL_KINDS: ReadonlySet<string> = new Set([FLUSH_KIND, RECOVERY_DELAY_KIND, ANNOUNCE_KIND]);

/** Most due-work runs of one world (a cycle reminder re-arms for ever; nobody acts in a replay). */
export const MAX_DUE_RUNS = 50_000;

export class World {
  readonly clock: VirtualClock;
  readonly collector: Collector;
  /** Delay recoveries per alarm (the uuid of the last alarm of the metric that recovered). */
  readonly delayRecovered = new Set<string>();
  private readonly handlers: Record<string, DueHandler>;
  private readonly pipeline;
  private running: string | undefined;

  constructor(
    private task: Task,
    private readonly directory: ReplayDirectory,
    start: number,
    readonly store = new MemoryPipeline(),
    readonly workflows = new MemoryWorkflows(),
    readonly due = new VirtualDue(),
  ) {
    this.clock = new VirtualClock(start);
    this.collector = new Collector(
      (id) => this.workflows.owner(id),
      () => !!webhookOf(this.task),
    );
    const parts = {
      clock: this.clock,
      due: this.due,
      collector: this.collector,
      task: () => this.task,
      groups: (ids: number[]) => ids.flatMap((id) => this.directory.groups.get(id) ?? []),
      users: (uids: number[]) => uids.flatMap((uid) => this.directory.users.get(uid) ?? []),
    };
    const workflowDeps = this.workflows.deps(parts);
    const deps = this.store.deps({ ...parts, workflows: workflowDeps });
    this.pipeline = {
      ...deps,
      finishWorkflowsOfMetric: async (input: { task: Task; metric: string }) => {
        if (this.running === RECOVERY_DELAY_KIND && this.collector.current)
          this.delayRecovered.add(this.collector.current);
        return deps.finishWorkflowsOfMetric(input);
      },
    };
    this.handlers = {
      [FLUSH_KIND]: (item, now) => flushCompressWindow(item, now, this.pipeline),
      [RECOVERY_DELAY_KIND]: (item, now) => runRecoveryDelay(item, now, this.pipeline),
      [REMIND_KIND]: (item, now) => fireReminder(item, now, workflowDeps),
      [ANNOUNCE_KIND]: async (item) => {
        await runAnnouncement(item, workflowDeps);
        return undefined;
      },
    };
  }

  /** The configuration this world decides with (a fork takes another one from then on). */
  get config(): Task {
    return this.task;
  }

  /** A copy of this world as it is now, deciding with `task` from here on, sending into a new collector. */
  fork(task: Task): World {
    return new World(
      task,
      this.directory,
      this.clock.now,
      this.store.clone(),
      this.workflows.clone(),
      this.due.clone(),
    );
  }

  /** Runs the due work of the time before `at`, then moves the clock to `at`. */
  private async advance(at: number): Promise<void> {
    await this.runDue(at);
    this.clock.now = Math.max(this.clock.now, at);
  }

  /** Runs the due work up to `until` (every kind). */
  async runDueUntil(until: number): Promise<void> {
    await this.runDue(until);
    this.collector.current = undefined;
  }

  private runDue(until: number, drain?: ReadonlySet<string>): Promise<void> {
    return this.due.runUntil(until, this.handlers, this.clock, {
      drain,
      limit: MAX_DUE_RUNS,
      before: (item) => {
        this.running = item.kind;
        this.collector.current = this.ownerOf(item);
      },
    });
  }

  private ownerOf(item: DueItem): string | undefined {
    const p = item.payload as { uuid?: string; metric?: string };
    if (item.kind === FLUSH_KIND) return p.uuid;
    if (item.kind === RECOVERY_DELAY_KIND && p.metric) return this.store.metricState(p.metric)?.last_uuid;
    return undefined;
  }

  /** One alarm through the alarm consumer's batch function, at `at`, with the history id it gets. */
  async process(alarm: AlarmMessage, historyId: number, at: number): Promise<void> {
    await this.advance(at);
    this.running = undefined;
    this.collector.current = alarm.uuid;
    this.store.historyId = historyId;
    const failed = await processAlarmBatch([{ id: alarm.uuid, body: JSON.stringify(alarm) }], this.pipeline);
    if (failed.length > 0) throw new Error(`replay: alarm ${alarm.uuid} could not be processed`);
  }

  /**
   * The effects of an alarm as it was recorded (no decision taken again): its notices and workflow at
   * its time, a delayed window's flush at the window's end.
   */
  async recorded(record: AlarmRecord): Promise<void> {
    await this.advance(record.processed_at);
    this.running = undefined;
    this.collector.current = record.uuid;
    this.store.records.set(record.uuid, record);
    await runEffects(this.task, record, this.pipeline);
    if (record.notify === 'deferred' && record.window)
      this.due.put(
        flushItem(
          record.task_id,
          record.history.metric,
          record.history.batch,
          record.uuid,
          record.window.end,
        ),
      );
  }

  /**
   * The end of the window: the due work up to `horizon`, then what the window's alarms still have
   * coming (their delayed flushes and delay recoveries, whenever they fall); reminders only within it.
   */
  async finish(horizon: number): Promise<void> {
    await this.runDue(horizon);
    await this.runDue(horizon, TAIL_KINDS);
    this.collector.current = undefined;
  }

  /** Due-work runs made, and those whose handler failed. */
  get dueRuns() {
    return this.due.runs;
  }
}
