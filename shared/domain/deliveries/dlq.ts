import { nowSeconds } from '../../clock.ts';
import { parseJson, toWireJson } from '../../json.ts';
import {
  type DeadLetter,
  MAX_SCAN,
  type Move,
  moveDeadLetters,
  releaseDeadLetters,
  scanDeadLetters,
} from '../../messaging/dead-letters.ts';
import type { QueueName } from '../../contracts/messages.ts';
import { getAlarmRecord } from '../alarms/repository.ts';
import { type DeadDueItem, listDeadDue, reviveDeadDue } from '../due/repository.ts';
import { NotFoundError, ValidationError } from '../errors.ts';
import { getJobState, listAttemptsOfJob } from '../notifications/repository.ts';
import { requireAdmin } from '../tasks/access.ts';
import { getWorkflows } from '../workflows/repository.ts';
import { listAttemptsOfEvent } from '../webhooks/repository.ts';
import { type AnyAttempt, type Carried, carriedBy, type Failures, failuresOf } from './dead-letter.ts';
import { DEFAULT_LIMIT, type DlqQueue } from './schemas.ts';
import type { DeadDueWork, DeadLetterList, QueueDeadLetter, Redriven } from './responses.ts';

/**
 * Dead letters (API guide §14): the messages the webhook, notify and alarm queues gave up on (their
 * dead-letter queues, shared/messaging/dead-letters.ts says how they are read without being
 * consumed), and the scheduler's dead due work (`DUEDEAD#<kind>`, queue `due`), listed with the reason
 * of the last attempt and redriven one by one or all. They span every task: super administrators only,
 * with an optional task filter.
 *
 * Reasons come from the attempt records: a webhook event's last failed attempt (`WHEVT#<event>`), a
 * notification job's last attempt that did not deliver (`NJOB#<job>`), a due item's stored error. The
 * alarm pipeline records no error per alarm (it logs "alarm processing failed" with the message id),
 * so an alarm's dead letter shows whether the alarm was recorded before it failed (`processed`), and
 * no reason.
 */

const int = (v: unknown) => (Number.isSafeInteger(v) ? (v as number) : undefined);

export interface DlqDeps {
  requireAdmin: typeof requireAdmin;
  scan: typeof scanDeadLetters;
  release: typeof releaseDeadLetters;
  move: typeof moveDeadLetters;
  attemptsOfEvent: (eventId: string) => Promise<AnyAttempt[]>;
  attemptsOfJob: (jobId: string) => Promise<AnyAttempt[]>;
  /** The attempts a notification job made (its last attempt number; runs for an older record). */
  lastAttemptOfJob: (jobId: string) => Promise<number | undefined>;
  alarmRecorded: (taskId: number, uuid: string) => Promise<boolean>;
  listDeadDue: typeof listDeadDue;
  reviveDeadDue: typeof reviveDeadDue;
  /** The task of each workflow (those that exist). */
  tasksOfWorkflows: (ids: number[]) => Promise<Map<number, number>>;
  now: () => number;
}

export const dlqDeps: DlqDeps = {
  requireAdmin,
  scan: scanDeadLetters,
  release: releaseDeadLetters,
  move: moveDeadLetters,
  attemptsOfEvent: (eventId) => listAttemptsOfEvent(eventId),
  attemptsOfJob: listAttemptsOfJob,
  lastAttemptOfJob: async (jobId) => {
    const state = await getJobState(jobId);
    return state && (state.last_attempt ?? state.runs);
  },
  alarmRecorded: async (taskId, uuid) => (await getAlarmRecord(taskId, uuid)) !== undefined,
  listDeadDue,
  reviveDeadDue,
  tasksOfWorkflows: async (ids) =>
    new Map([...(await getWorkflows(ids)).values()].map((w) => [w.id, w.task_id])),
  now: nowSeconds,
};

/** Dead workflow items read at most to filter them by task (dead work is rare; they stay 1,000). */
const MAX_DUE_SCAN = 1_000;

/** Every kind of due work (functions/schedule/due-handlers.ts; a unit test keeps the two lists equal). */
export const DUE_KINDS = [
  'workflow-announce',
  'workflow-remind',
  'task-pause-expiry',
  'compress-flush',
  'recovery-delay',
  'heartbeat',
  'schedule-coverage',
] as const;

/** Dead letters redriven by one request at most (`more` says when to ask again). */
export const REDRIVE_MAX = 100;

const taskOf = (c: Carried) => c.task_id;

async function describe(
  queue: QueueDeadLetter['queue'],
  letter: DeadLetter,
  carried: Carried,
  deps: DlqDeps,
): Promise<QueueDeadLetter> {
  let failures: Failures = { attempts: 0 };
  let extra: { processed?: boolean } = {};
  if (carried.kind === 'webhook') failures = failuresOf(await deps.attemptsOfEvent(carried.event_id));
  else if (carried.kind === 'webhooks') {
    const all = await Promise.all(carried.events.map((e) => deps.attemptsOfEvent(e.event_id)));
    failures = failuresOf(all.flat());
  } else if (carried.kind === 'notify') failures = failuresOf(await deps.attemptsOfJob(carried.job_id));
  else if (carried.kind === 'alarm')
    extra = { processed: await deps.alarmRecorded(carried.task_id, carried.uuid) };
  else
    failures = {
      attempts: 0,
      reason: { outcome: 'malformed', attempt: 0, error: 'not a message of this queue' },
    };
  return {
    message_id: letter.messageId,
    queue,
    ...carried,
    receive_count: letter.receiveCount,
    ...(letter.sentAt !== undefined ? { sent_at: letter.sentAt } : {}),
    ...failures,
    ...extra,
  };
}

export interface ListDeadLettersInput {
  uid: number;
  queue: DlqQueue;
  task_id?: number;
  limit?: number;
}

const ALARM_NOTE =
  'the alarm pipeline records no error per alarm: see the alarm consumer logs ("alarm processing failed") for the message id';

/** GET /delivery/dlq: a dead-letter queue's messages (not consumed), newest scan order, role 9 only. */
export async function listDeadLetters(
  input: ListDeadLettersInput,
  deps: DlqDeps = dlqDeps,
): Promise<DeadLetterList> {
  await deps.requireAdmin(input.uid);
  const limit = input.limit ?? DEFAULT_LIMIT;
  if (input.queue === 'due') return listDeadDueWork(limit, input.task_id, deps);
  const queue = input.queue;
  const matches = (l: DeadLetter) =>
    input.task_id === undefined || taskOf(carriedBy(queue, l.body)) === input.task_id;
  // One more than asked for, to tell whether there is more.
  const scan = await deps.scan(queue, MAX_SCAN, matches, limit + 1);
  try {
    const chosen = scan.messages.filter(matches);
    const dead_letters = await Promise.all(
      chosen.slice(0, limit).map((l) => describe(queue, l, carriedBy(queue, l.body), deps)),
    );
    return {
      queue,
      dead_letters,
      more: chosen.length > limit || !scan.complete,
      scanned: scan.messages.length,
      ...(queue === 'alarm' ? { note: ALARM_NOTE } : {}),
    };
  } finally {
    await deps.release(queue, scan.messages);
  }
}

/** The id of a dead due item in the listing and the redrive: `<kind>#<due at>#<ref>`. */
const dueId = (d: Pick<DeadDueItem, 'kind' | 'due_at' | 'ref'>) => `${d.kind}#${d.due_at}#${d.ref}`;

function parseDueId(id: string): { kind: string; due_at: number; ref: string } | undefined {
  const m = /^([a-z][a-z-]*)#(\d{1,12})#(.+)$/.exec(id);
  if (!m || !(DUE_KINDS as readonly string[]).includes(m[1])) return undefined;
  return { kind: m[1], due_at: Number(m[2]), ref: m[3] };
}

const taskOfDue = (d: DeadDueItem) => int(d.payload.task_id);

/** Workflow work names its workflows, not its task: a task filter reads their tasks. */
const WORKFLOW_KINDS = new Set(['workflow-announce', 'workflow-remind']);

/** The workflows a dead workflow item is about (an announcement may span several, of several tasks). */
function workflowsOfDue(d: DeadDueItem): number[] {
  const p = d.payload as { workflow_id?: unknown; records?: { workflow_id?: unknown }[] };
  const ids = [p.workflow_id, ...(Array.isArray(p.records) ? p.records.map((r) => r?.workflow_id) : [])];
  return ids.filter((id): id is number => Number.isSafeInteger(id));
}

async function deadDueItems(limit: number, taskId: number | undefined, deps: DlqDeps) {
  const lists = await Promise.all(
    DUE_KINDS.map(async (kind) => {
      if (taskId === undefined || !WORKFLOW_KINDS.has(kind)) return deps.listDeadDue(kind, limit + 1, taskId);
      const all = await deps.listDeadDue(kind, MAX_DUE_SCAN);
      const tasks = await deps.tasksOfWorkflows([...new Set(all.flatMap(workflowsOfDue))]);
      return all.filter((d) => workflowsOfDue(d).some((w) => tasks.get(w) === taskId)).slice(0, limit + 1);
    }),
  );
  return lists.flat().sort((a, b) => b.buried_at - a.buried_at || b.due_at - a.due_at);
}

async function listDeadDueWork(
  limit: number,
  taskId: number | undefined,
  deps: DlqDeps,
): Promise<DeadLetterList> {
  const items = await deadDueItems(limit, taskId, deps);
  return {
    queue: 'due' as const,
    dead_letters: items.slice(0, limit).map(
      (d): DeadDueWork => ({
        message_id: dueId(d),
        queue: 'due' as const,
        kind: d.kind,
        ref: d.ref,
        due_at: d.due_at,
        ...(taskOfDue(d) !== undefined ? { task_id: taskOfDue(d) } : {}),
        attempts: d.attempts ?? 0,
        last_failure_at: d.buried_at,
        reason: { outcome: 'failed', attempt: d.attempts ?? 0, error: d.error, at: d.buried_at },
      }),
    ),
    more: items.length > limit,
    scanned: items.length,
  };
}

export interface RedriveInput {
  uid: number;
  queue: DlqQueue;
  message_id?: string;
  all?: 1 | true;
  task_id?: number;
}

/**
 * The body a dead letter goes back with. A webhook event and a notification job number their
 * attempts on from those already made (so the trace reads as one history) and get their retries
 * again; an alarm, a bundle or a malformed message goes back as it was.
 */
export async function redriveBody(
  queue: QueueName,
  letter: DeadLetter,
  deps: Pick<DlqDeps, 'attemptsOfEvent' | 'lastAttemptOfJob'>,
): Promise<string> {
  const carried = carriedBy(queue, letter.body);
  if (carried.kind === 'webhook') {
    const msg = parseJson(letter.body) as Record<string, unknown>;
    const made = Math.max(
      int(msg.attempts_before) ?? 0,
      ...(await deps.attemptsOfEvent(carried.event_id)).map((a) => a.attempt),
    );
    return toWireJson({ ...msg, attempts_before: made, redriven_after: made });
  }
  if (carried.kind === 'notify') {
    const job = parseJson(letter.body) as Record<string, unknown>;
    const made = Math.max(int(job.attempts_before) ?? 0, (await deps.lastAttemptOfJob(carried.job_id)) ?? 0);
    return toWireJson({ ...job, attempts_before: made, redriven_after: made });
  }
  return letter.body;
}

/**
 * POST /delivery/dlq/redrive: one dead letter (by `message_id`) or all of them (`all: 1`, of one task
 * with `task_id`) back to the source queue; at most REDRIVE_MAX per request (`more` says when to call
 * again). Each is sent to the source queue first and deleted from the dead-letter queue after.
 */
export async function redriveDeadLetters(input: RedriveInput, deps: DlqDeps = dlqDeps): Promise<Redriven> {
  await deps.requireAdmin(input.uid);
  if ((input.message_id === undefined) === (input.all === undefined)) {
    throw ValidationError.of('message_id', 'or all is required (one of them)');
  }
  if (input.queue === 'due') return redriveDeadDue(input, deps);
  const queue = input.queue;
  const wanted = (l: DeadLetter) =>
    input.message_id !== undefined
      ? l.messageId === input.message_id
      : input.task_id === undefined || taskOf(carriedBy(queue, l.body)) === input.task_id;
  const one = input.message_id !== undefined;
  const max = one ? 1 : REDRIVE_MAX;
  // One more than taken (all), to tell whether there is more; a message id is found once.
  const scan = await deps.scan(queue, MAX_SCAN, wanted, one ? 1 : max + 1);
  let moved: string[] = [];
  try {
    const matching = scan.messages.filter(wanted);
    const chosen = matching.slice(0, max);
    if (one && chosen.length === 0) {
      throw new NotFoundError(`message [${input.message_id}] not found in the ${queue} dead-letter queue`);
    }
    const moves: Move[] = await Promise.all(
      chosen.map(async (letter) => ({ letter, body: await redriveBody(queue, letter, deps) })),
    );
    moved = await deps.move(queue, moves);
    return {
      queue,
      redriven: moved.length,
      message_ids: moved,
      more: matching.length > chosen.length || (!one && !scan.complete),
    };
  } finally {
    const gone = new Set(moved);
    await deps.release(
      queue,
      scan.messages.filter((l) => !gone.has(l.messageId)),
    );
  }
}

async function redriveDeadDue(input: RedriveInput, deps: DlqDeps): Promise<Redriven> {
  const now = deps.now();
  if (input.message_id !== undefined) {
    const id = parseDueId(input.message_id);
    if (!id || !(await deps.reviveDeadDue(id, now))) {
      throw new NotFoundError(`message [${input.message_id}] not found in the dead due work`);
    }
    return { queue: 'due' as const, redriven: 1, message_ids: [input.message_id], more: false };
  }
  const items = await deadDueItems(REDRIVE_MAX, input.task_id, deps);
  const chosen = items.slice(0, REDRIVE_MAX);
  const revived: string[] = [];
  for (const d of chosen) if (await deps.reviveDeadDue(d, now)) revived.push(dueId(d));
  return {
    queue: 'due' as const,
    redriven: revived.length,
    message_ids: revived,
    more: items.length > chosen.length,
  };
}
