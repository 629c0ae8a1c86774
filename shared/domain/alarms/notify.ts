import type {
  ClaimTarget,
  NotificationJob,
  NotifyScene,
  RenderContext,
  WebhookBody,
} from '../../contracts/messages.ts';
import type { AlarmFacts } from '../conditions/evaluate.ts';
import { firstMatch } from '../conditions/evaluate.ts';
import type { AlarmGroup } from '../directory/model.ts';
import { COMPRESS_METHOD_NAMES, COMPRESS_TYPE_NAMES } from '../notifications/render.ts';
import { withOncall } from '../notifications/oncall.ts';
import { alarmGroupIds, channelJobs, type ReceiverSet, recipientsOf } from '../notifications/receivers.ts';
import type { OncallResolver } from '../schedules/resolve.ts';
import { nowSeconds } from '../../clock.ts';
import type { Task } from '../tasks/model.ts';
import type { ReceiverConfig } from '../../contracts/receivers.ts';

/**
 * The notify stage (API guide §9.7): which receivers an alarm goes to, and the messages it sends.
 * Decisions are pure; sending goes through the `deps` the pipeline passes in.
 */

/** Which of the task's receivers an alarm goes to (recorded with the alarm). */
export interface ReceiverSelection {
  /** The report carried its own receiver, which replaces the task's. */
  override: boolean;
  /** Indexes of the dispatch items notified. */
  dispatch: number[];
  /** The task's default receivers (alarmgroup + channels) are notified. */
  defaults: boolean;
}

export const DISPATCH_LAZY = 1;
export const DISPATCH_NON_LAZY = 2;

/**
 * Dispatch: each item whose conditions match is notified; lazy mode (1, the default) stops at the
 * first matching item and skips the defaults; non-lazy (2) notifies every matching item and the
 * defaults. No match: the defaults. A report override replaces all of it.
 */
export function selectReceivers(
  receiver: ReceiverConfig | undefined,
  facts: AlarmFacts,
  override?: ReceiverConfig,
): ReceiverSelection {
  if (override) return { override: true, dispatch: [], defaults: false };
  const items = receiver?.dispatch ?? [];
  const matched: number[] = [];
  for (let i = 0; i < items.length; i++) {
    if (firstMatch(items[i].conditions, facts) < 0) continue;
    matched.push(i);
    if (receiver?.mode !== DISPATCH_NON_LAZY) return { override: false, dispatch: matched, defaults: false };
  }
  return { override: false, dispatch: matched, defaults: true };
}

/**
 * The receiver sets a selection stands for, in order (dispatch items, then the defaults), each keyed
 * by where it comes from (`d<i>`, `default`, `override`): robots are grouped per set (API guide §9.7).
 */
export function selectedReceivers(
  receiver: ReceiverConfig | undefined,
  selection: ReceiverSelection,
  override?: ReceiverConfig,
): ReceiverSet[] {
  if (selection.override) return override ? [{ ...override, set: 'override' }] : [];
  const out: ReceiverSet[] = [];
  for (const i of selection.dispatch) {
    const item = receiver?.dispatch?.[i];
    if (item) out.push({ ...item.receiver, set: `d${i}` });
  }
  if (selection.defaults && receiver)
    out.push({
      alarmgroup: receiver.alarmgroup,
      channels: receiver.channels,
      oncall: receiver.oncall,
      set: 'default',
    });
  return out;
}

/** `context.task` of a notification: the task plus its compression method and type by name. */
export function taskContext(task: Pick<Task, 'id' | 'name' | 'compress'>): RenderContext['task'] {
  const on = task.compress?.enable === true;
  return {
    id: task.id,
    name: task.name,
    compress_method: on ? (COMPRESS_METHOD_NAMES[task.compress.method ?? 0] ?? 'none') : 'none',
    compress_type: on ? (COMPRESS_TYPE_NAMES[task.compress.strategy ?? 0] ?? 'none') : 'none',
  };
}

export interface SendDeps {
  getAlarmGroups(ids: number[]): Promise<AlarmGroup[]>;
  /** Who the schedules receivers name have on call (default: schedules/resolve.ts, cached). */
  resolveOncall?: OncallResolver;
  publishJobs(jobs: NotificationJob[]): Promise<void>;
  publishEvents(taskId: number, events: { body: WebhookBody; eventId: string }[]): Promise<void>;
}

/** One message: a webhook event and the channel notifications of one scene. */
export interface Notice {
  task: Pick<Task, 'id' | 'name' | 'compress'>;
  /** The receiver sets (plain configurations are keyed by position, see `ReceiverSet`). */
  receivers: ReceiverSet[];
  scene: NotifyScene;
  /** Deterministic job id prefix (`<uuid>:<scene>`); channelJobs appends `:<channel>` (robots `:<channel>:<set>`). */
  jobId: string;
  history: Record<string, unknown>;
  context: Record<string, unknown>;
  event: { body: WebhookBody; eventId: string };
  /** The pending workflow the alarm opened: its messages carry claim links (API guide §11.7). */
  claim?: ClaimTarget;
}

/**
 * The channel jobs of a notice: people merged over its receiver sets, robots per set (API guide §9.7);
 * receivers naming a schedule page whoever it has on call now, when the message is made.
 */
export async function noticeJobs(
  n: Notice,
  deps: Pick<SendDeps, 'getAlarmGroups' | 'resolveOncall'>,
): Promise<NotificationJob[]> {
  const { sets, oncall } = await withOncall(n.receivers, nowSeconds(), deps.resolveOncall);
  const ids = alarmGroupIds(sets);
  const groups = ids.length ? await deps.getAlarmGroups(ids) : [];
  return channelJobs(
    { ...recipientsOf(sets, groups), oncall },
    {
      job_id: n.jobId,
      task_id: n.task.id,
      scene: n.scene,
      context: { task: taskContext(n.task), history: n.history, context: n.context },
      ...(n.claim ? { claim: n.claim } : {}),
    },
  );
}

/** Sends a notice: its event to the task's webhook and one job per channel (both idempotent by id). */
export async function sendNotice(n: Notice, deps: SendDeps): Promise<void> {
  const jobs = await noticeJobs(n, deps);
  await deps.publishEvents(n.task.id, [n.event]);
  if (jobs.length) await deps.publishJobs(jobs);
}
